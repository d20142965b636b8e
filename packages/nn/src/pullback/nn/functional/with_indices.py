"""PyTorch's ``*_with_indices`` pooling functions: the max pools that always return
``(values, indices)`` (their ``return_indices`` argument is accepted and ignored, as there)."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .adaptive import adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d
from .pooling import max_pool1d, max_pool2d, max_pool3d


def _always_with_indices(pool: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(pool)

    def with_indices(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.arguments["return_indices"] = True
        return pool(*bound.args, **bound.kwargs)

    with_indices.__name__ = with_indices.__qualname__ = f"{pool.__name__}_with_indices"
    with_indices.__doc__ = f"``{pool.__name__}(..., return_indices=True)``: (values, indices)."
    with_indices.__signature__ = signature  # type: ignore[attr-defined]
    return with_indices


max_pool1d_with_indices = _always_with_indices(max_pool1d)
max_pool2d_with_indices = _always_with_indices(max_pool2d)
max_pool3d_with_indices = _always_with_indices(max_pool3d)
adaptive_max_pool1d_with_indices = _always_with_indices(adaptive_max_pool1d)
adaptive_max_pool2d_with_indices = _always_with_indices(adaptive_max_pool2d)
adaptive_max_pool3d_with_indices = _always_with_indices(adaptive_max_pool3d)
