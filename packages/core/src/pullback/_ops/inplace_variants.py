"""In-place variants (``x.scatter_(...)``, ``x.addcmul_(...)``...) of the functions added for
ported PyTorch code: each computes the out-of-place result and stores it into ``x`` through
:func:`pullback._ops.mutation.inplace`, which handles autograd (a recorded in-place op re-points
the tensor), leaves that require grad, views and dtypes as for every in-place op."""

from __future__ import annotations

from typing import Any, Callable

from . import products, scatter, special_elementwise
from .index import scatter_add
from .mutation import inplace


def _inplace_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(x: Any, *args: Any, **kwargs: Any) -> Any:
        return inplace(x, fn, *args, **kwargs)

    method.__name__ = f"{fn.__name__}_"
    method.__doc__ = f"In-place :func:`{fn.__name__}`: the result is stored into ``x``."
    return method


_SOURCES = {
    "addcmul": products.addcmul, "addcdiv": products.addcdiv,
    "lerp": special_elementwise.lerp, "nan_to_num": special_elementwise.nan_to_num,
    "scatter": scatter.scatter, "scatter_add": scatter_add,
    "scatter_reduce": scatter.scatter_reduce, "index_add": scatter.index_add,
    "index_copy": scatter.index_copy, "index_fill": scatter.index_fill,
    "masked_scatter": scatter.masked_scatter, "put": scatter.put,
    **{name: getattr(special_elementwise, name) for name in (
        "acos", "asin", "atan", "cosh", "sinh", "tan", "asinh", "acosh", "atanh", "exp2",
        "log2", "log10", "sinc", "atan2", "copysign", "hypot", "xlogy")},
}

VARIANTS = {f"{name}_": _inplace_of(fn) for name, fn in _SOURCES.items()}
METHODS = tuple(VARIANTS)
