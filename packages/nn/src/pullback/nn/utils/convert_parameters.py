"""``parameters_to_vector`` and ``vector_to_parameters`` (``torch.nn.utils``'s): a model's
parameters as one flat vector, and back."""

from __future__ import annotations

from typing import Iterable

import pullback
from pullback.errors import DeviceError, ShapeError
from pullback.tensor import Tensor


def _checked(parameters: Iterable[Tensor], fn: str) -> list[Tensor]:
    params = list(parameters)
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise TypeError(f"{fn}: expected an iterable of Tensors, item {i} is "
                            f"{type(p).__name__}")
        if p.device != params[0].device:
            raise DeviceError(f"{fn}: parameters are on {params[0].device} and {p.device}; "
                              "they must all be on one device")
    return params


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one 1-d tensor, in order (a copy that
    stays in the graph: its gradient flows back to the parameters).

    Example:
        >>> import pullback, pullback.nn as nn
        >>> nn.utils.parameters_to_vector(nn.Linear(3, 2).parameters()).shape
        (8,)
    """
    params = _checked(parameters, "parameters_to_vector")
    return pullback.cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Set the parameters' values from the consecutive slices of ``vec`` (a 1-d tensor as
    :func:`parameters_to_vector` makes), through ``.data``, outside the graph, as PyTorch."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"vector_to_parameters: expected vec to be a Tensor, got "
                        f"{type(vec).__name__}")
    params = _checked(parameters, "vector_to_parameters")
    needed = sum(p.numel() for p in params)
    if vec.ndim != 1 or vec.shape[0] != needed:
        raise ShapeError(f"vector_to_parameters: vec has shape {tuple(vec.shape)}, the "
                         f"parameters hold {needed} values")
    start = 0
    for p in params:
        n = p.numel()
        p.data = vec[start:start + n].reshape(p.shape).detach().to(dtype=p.dtype)
        start += n
