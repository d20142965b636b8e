"""The CPU backend's native kernels (:mod:`pullback.native`) for core ops on float32: exact GELU
and its derivative, where the NumPy kernel needs two dozen passes per block (the normal CDF of
``_ops/_erf32.py``) and C needs one; ReLU's derivative, where NumPy's ``where`` branches on
every element of a random mask; the sum over the leading axis of a matrix (a bias
gradient), where NumPy runs one short loop per row (bitwise NumPy's result, in NumPy's order);
and an embedding's gradient, rows summed pairwise at their indices (as the NumPy kernel's sort
and ``add.reduceat``, without the sort and the gather).

Each function returns ``NotImplemented`` for inputs it does not cover (another dtype, the tanh
approximation, a small array, no compiler; strided ones are copied once); the backend then runs
the op's NumPy kernel.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import native

_SOURCES = Path(__file__).parent / "_csrc"


@lru_cache(maxsize=None)
def _function(name: str, n_pointers: int, source: str = "activations",
              n_sizes: int = 0) -> Callable[..., None] | None:
    library = native.load(source, _SOURCES / f"{source}.c")
    return None if library is None else native.declare(library, name, n_pointers, n_sizes)


def gelu(x: Any, approximate: str = "none") -> Any:
    """``x Phi(x)``, or ``NotImplemented``."""
    inputs = native.float32_inputs(x) if approximate == "none" else None
    kernel = _function("gelu_f32", 2)
    if inputs is None or kernel is None:
        return NotImplemented
    (x,) = inputs
    out = np.empty_like(x)
    native.run_rows(kernel, x.size, 1, native.address(x), native.address(out))
    return out


def gelu_backward(g: Any, x: Any, approximate: str = "none") -> Any:
    """``g * gelu'(x)``, or ``NotImplemented``."""
    if approximate != "none":
        return NotImplemented
    return _binary("gelu_backward_f32", g, x)


def relu_backward(g: Any, y: Any) -> Any:
    """``g`` where ``y > 0``, else 0, or ``NotImplemented``."""
    return _binary("relu_backward_f32", g, y)


def _binary(function: str, a: Any, b: Any) -> Any:
    """``function(a, b)`` elementwise into a new array, or ``NotImplemented``."""
    inputs = native.float32_inputs(a, b) if a.shape == b.shape else None
    kernel = _function(function, 3)
    if inputs is None or kernel is None:
        return NotImplemented
    a, b = inputs
    out = np.empty_like(a)
    native.run_rows(kernel, a.size, 1, native.address(a), native.address(b), native.address(out))
    return out


def sum_leading_axis(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``x.sum(axis=0)`` of a C-contiguous float32 array of two or more axes (bitwise NumPy's),
    or ``NotImplemented``. One column (NumPy sums a contiguous vector pairwise, in another
    order) and other axes are NumPy's."""
    if axis.__class__ is tuple and len(axis) == 1:
        axis = axis[0]
    if (axis.__class__ is not int or x.__class__ is not np.ndarray or x.dtype != np.float32
            or x.ndim < 2 or axis not in (0, -x.ndim) or x.shape[0] < 2
            or x.size < native.MIN_NATIVE_ELEMENTS or not x.flags.c_contiguous):
        return NotImplemented
    cols = x.size // x.shape[0]
    kernel = _function("column_sums_f32", 2, "reductions", 1)
    if cols < 2 or kernel is None:
        return NotImplemented
    out = np.empty(x.shape[1:], np.float32)
    # one pass: no thread split
    kernel(0, x.shape[0], native.address(x), native.address(out), cols)
    return out.reshape((1,) + out.shape) if keepdims else out


def take_scatter_add(g: Any, idx: Any, axis: int, shape: tuple[int, ...]) -> Any:
    """``take``'s gradient along axis 0 (``out[idx[i]] += g[i]``, an embedding's weight
    gradient) of float32 rows, each row's sum pairwise as NumPy's kernel's ``add.reduceat`` (to
    float32 rounding of it, not bitwise), or ``NotImplemented``: other axes, dtypes or shapes,
    and out-of-range indices (the NumPy kernel raises its error for those)."""
    if (axis != 0 or g.__class__ is not np.ndarray or g.dtype != np.float32
            or idx.__class__ is not np.ndarray or idx.dtype.kind not in "iu" or idx.size == 0
            or g.shape[:idx.ndim] != idx.shape or g.shape[idx.ndim:] != tuple(shape[1:])
            or g.size < native.MIN_NATIVE_ELEMENTS):
        return NotImplemented
    rows = shape[0]
    flat = idx.reshape(-1).astype(np.int64)
    flat = np.where(flat < 0, flat + rows, flat)
    if flat.min() < 0 or flat.max() >= rows:
        return NotImplemented
    kernel = _function("rows_by_index_f32", 6, "reductions", 2)
    if kernel is None:
        return NotImplemented
    g = np.ascontiguousarray(g)
    n = flat.size
    cols = g.size // n
    out = np.zeros(shape, np.float32)
    starts = np.zeros(rows + 1, np.int64)
    order = np.empty(n, np.int64)
    tmp = np.empty((n.bit_length() + 1, cols), np.float32)  # a row per level of the halving
    # one call: no thread split
    kernel(0, n, native.address(g), native.address(flat), native.address(out),
           native.address(starts), native.address(order), native.address(tmp), rows, cols)
    return out


NATIVE_KERNELS: dict[str, Callable[..., Any]] = {
    "gelu": gelu, "gelu_backward": gelu_backward, "relu_backward": relu_backward,
    "sum": sum_leading_axis, "take_scatter_add": take_scatter_add,
}

