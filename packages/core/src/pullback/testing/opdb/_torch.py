"""PyTorch spellings of pullback's conventions, for the records' ``torch`` lambdas.

Every helper takes the torch module as its first argument: nothing here imports torch, so the op
database loads (and the conformance suite runs) where PyTorch is not installed.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...dtypes import to_dtype

_TORCH_DTYPE_NAMES = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "bool": "bool",
}


def torch_dtype(torch: Any, dtype: Any) -> Any:
    """PyTorch's dtype for a pullback (NumPy) dtype or dtype name."""
    return getattr(torch, _TORCH_DTYPE_NAMES[str(to_dtype(dtype))])


def numpy_dtype_name(torch_dtype_: Any) -> str:
    """The pullback dtype name of a PyTorch dtype (``torch.float32`` -> ``"float32"``)."""
    return str(torch_dtype_).removeprefix("torch.")


def binary(torch: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` taking Python numbers on either side, as pullback's binary functions do.

    A number becomes a 0-d tensor of ``torch.result_type(other, number)``, the dtype PyTorch
    gives a wrapped number, so promotion is unchanged.
    """

    def call(x: Any, y: Any, *rest: Any, **kwargs: Any) -> Any:
        if not isinstance(x, torch.Tensor):
            x = torch.tensor(x, dtype=torch.result_type(y, x))
        if not isinstance(y, torch.Tensor):
            y = torch.tensor(y, dtype=torch.result_type(x, y))
        return fn(x, y, *rest, **kwargs)

    return call


def axis_and_keep(kwargs: dict[str, Any]) -> tuple[Any, bool]:
    """pullback's ``axis``/``dim`` and ``keepdims``/``keepdim`` keywords as one pair."""
    axis = kwargs.pop("axis", None)
    dim = kwargs.pop("dim", None)
    keep = kwargs.pop("keepdims", None)
    keepdim = kwargs.pop("keepdim", None)
    return (dim if dim is not None else axis), bool(keepdim if keepdim is not None else keep)


def reduction(torch: Any, name: str) -> Callable[..., Any]:
    """``torch.<name>`` called the way pullback's reductions are (``axis=None`` means all)."""
    fn = getattr(torch, name)

    def call(x: Any, axis: Any = None, keepdims: Any = None, **kwargs: Any) -> Any:
        axis, keep = axis_and_keep({"axis": axis, "keepdims": keepdims, **kwargs})
        if axis is None and name in ("argmax", "argmin"):  # the flattened tensor
            return fn(x, dim=None, keepdim=keep)
        if axis is None:  # all axes; PyTorch spells that of a 0-d tensor dim=0
            axis = tuple(range(x.ndim)) if x.ndim else 0
        return fn(x, dim=axis, keepdim=keep)

    return call


def prod(torch: Any) -> Callable[..., Any]:
    """``torch.prod`` over several axes (PyTorch reduces one at a time)."""

    def call(x: Any, axis: Any = None, keepdims: Any = None, **kwargs: Any) -> Any:
        axis, keep = axis_and_keep({"axis": axis, "keepdims": keepdims, **kwargs})
        axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
        axes = sorted({a % max(x.ndim, 1) for a in axes}, reverse=True)
        out = x
        for a in axes:
            out = torch.prod(out, dim=a, keepdim=True)
        if not keep:
            out = out.reshape([s for i, s in enumerate(out.shape) if i not in axes])
        return out

    return call


def values_indices(torch: Any, name: str) -> Callable[..., Any]:
    """``torch.max``/``torch.min`` with pullback's keywords: all elements (ties share the
    gradient), or ``(values, indices)`` along an axis (the gradient goes to the index)."""
    fn = getattr(torch, name)

    def call(x: Any, axis: Any = None, keepdims: Any = None, **kwargs: Any) -> Any:
        axis, keep = axis_and_keep({"axis": axis, "keepdims": keepdims, **kwargs})
        if axis is None:
            return fn(x)
        return tuple(fn(x, dim=axis, keepdim=keep))

    return call


def variance(torch: Any, name: str) -> Callable[..., Any]:
    """``torch.var``/``torch.std`` with pullback's keywords."""
    fn = getattr(torch, name)

    def call(x: Any, axis: Any = None, *, correction: float = 1, unbiased: Any = None,
             **kwargs: Any) -> Any:
        axis, keep = axis_and_keep({"axis": axis, **kwargs})
        if unbiased is not None:
            correction = 1 if unbiased else 0
        return fn(x, dim=axis, correction=correction, keepdim=keep)

    return call


def as_index(torch: Any, key: Any) -> Any:
    """A NumPy index (arrays inside tuples) as PyTorch tensors."""
    if isinstance(key, tuple):
        return tuple(as_index(torch, k) for k in key)
    if isinstance(key, np.ndarray):
        return torch.as_tensor(key)
    return key
