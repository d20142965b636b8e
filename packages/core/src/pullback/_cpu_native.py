"""The CPU backend's native kernels (:mod:`pullback.native`) for core ops on float32: exact GELU
and its derivative, where the NumPy kernel needs two dozen passes per block (the normal CDF of
``_ops/_erf32.py``) and C needs one, and ReLU's derivative, where NumPy's ``where`` branches on
every element of a random mask.

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

_SOURCE = Path(__file__).parent / "_csrc" / "activations.c"


@lru_cache(maxsize=None)
def _function(name: str, n_pointers: int) -> Callable[..., None] | None:
    library = native.load("activations", _SOURCE)
    return None if library is None else native.declare(library, name, n_pointers)


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


NATIVE_KERNELS: dict[str, Callable[..., Any]] = {
    "gelu": gelu, "gelu_backward": gelu_backward, "relu_backward": relu_backward,
}

