"""The CPU backend's native kernels (:mod:`pullback.native`) for core ops on float32: exact GELU
and its derivative, where the NumPy kernel needs two dozen passes per block (the normal CDF of
``_ops/_erf32.py``) and C needs one; ReLU's derivative, where NumPy's ``where`` branches on
every element of a random mask; and the sum over the leading axis of a matrix (a bias
gradient), where NumPy runs one short loop per row (bitwise NumPy's result, in NumPy's order).

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
    native.run_rows(kernel, x.size, 1, x.ctypes.data, out.ctypes.data)
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
    native.run_rows(kernel, a.size, 1, a.ctypes.data, b.ctypes.data, out.ctypes.data)
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
    kernel(0, x.shape[0], x.ctypes.data, out.ctypes.data, cols)  # one pass: no thread split
    return out.reshape((1,) + out.shape) if keepdims else out


NATIVE_KERNELS: dict[str, Callable[..., Any]] = {
    "gelu": gelu, "gelu_backward": gelu_backward, "relu_backward": relu_backward,
    "sum": sum_leading_axis,
}

