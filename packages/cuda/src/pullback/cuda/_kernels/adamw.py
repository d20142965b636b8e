"""The fused Adam/AdamW step (``adamw.cu``) and the checks in front of it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pullback.errors import DeviceError, DTypeError, ShapeError
from pullback.tensor import Tensor

THREADS = 256
MAX_BLOCKS = 4096  # grid-stride loop beyond this: more blocks only add scheduling work


def adam_grid(n: int) -> int:
    """Blocks for ``n`` elements (at least one)."""
    return max(1, min(-(-n // THREADS), MAX_BLOCKS))


def _array(x: Any) -> Any:
    """The backend array of a Tensor; arrays pass through."""
    return x.array if isinstance(x, Tensor) else x


def _is_cupy(x: Any) -> bool:
    return type(x).__module__.startswith("cupy")


def unsupported_reason(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any,
                       max_exp_avg_sq: Any = None) -> str | None:
    """Why the fused step cannot update these arrays (``None`` when it can): every one must be a
    C-contiguous float32 CuPy array of one shape on one GPU."""
    arrays = [("param", param), ("grad", grad), ("exp_avg", exp_avg),
              ("exp_avg_sq", exp_avg_sq)]
    if max_exp_avg_sq is not None:
        arrays.append(("max_exp_avg_sq", max_exp_avg_sq))
    first = _array(param)
    for name, value in arrays:
        a = _array(value)
        if not _is_cupy(a):
            return f"{name} is a {type(a).__name__}, not a CUDA array"
        if a.dtype != np.float32:
            return f"{name} has dtype {a.dtype} (the fused step takes float32)"
        if a.shape != first.shape:
            return f"{name} has shape {a.shape}, param {first.shape}"
        if a.device.id != first.device.id:
            return f"{name} is on cuda:{a.device.id}, param on cuda:{first.device.id}"
        if not a.flags.c_contiguous:
            return f"{name} is not contiguous"
    return None


def fused_adam_(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, *, lr: float,
                beta1: float, beta2: float, eps: float, weight_decay: float, step: int,
                decoupled: bool = True, maximize: bool = False,
                max_exp_avg_sq: Any = None) -> None:
    """One Adam (``decoupled=False``) or AdamW step, in place, in one kernel launch.

    See :func:`pullback.cuda.fused_adamw_` for the arguments. Raises a typed error naming the
    offending argument when :func:`unsupported_reason` finds one.
    """
    reason = unsupported_reason(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq)
    if reason is not None:
        shapes = f"param {getattr(param, 'shape', '?')} {getattr(param, 'dtype', '?')}"
        kind = DeviceError if "CUDA" in reason or "cuda:" in reason else (
            DTypeError if "dtype" in reason else ShapeError)
        raise kind(f"fused_adamw_: {reason} ({shapes})")
    if step < 1:
        raise ValueError(f"fused_adamw_: step counts from 1, got {step}")
    p, g, m, v = (_array(x) for x in (param, grad, exp_avg, exp_avg_sq))
    vmax = _array(max_exp_avg_sq) if max_exp_avg_sq is not None else None
    n = p.size
    if n == 0:
        return
    import cupy

    from ._module import launch

    args = kernel_args(p, g, m, v, vmax, lr=lr, beta1=beta1, beta2=beta2,
                       eps=eps, weight_decay=weight_decay, step=step, decoupled=decoupled,
                       maximize=maximize)
    with cupy.cuda.Device(p.device.id):
        launch("adamw", "adam_step", (adam_grid(n),), (THREADS,), args)


def kernel_args(p: Any, g: Any, m: Any, v: Any, vmax: Any, *, lr: float, beta1: float,
                beta2: float, eps: float, weight_decay: float, step: int, decoupled: bool,
                maximize: bool) -> tuple[Any, ...]:
    """``adam_step``'s arguments: the factors computed once in double precision, then rounded to
    float32 (as the generic step's ufuncs round them). ``vmax`` is ``None`` without AMSGrad."""
    f32 = np.float32
    return (p, g, m, v, v if vmax is None else vmax, np.int64(p.size), f32(1.0 - beta1),
            f32(1.0 - beta2), f32(eps), f32(weight_decay), f32(1.0 - lr * weight_decay),
            f32(lr / (1.0 - beta1**step)), f32(math.sqrt(1.0 - beta2**step)),
            np.int32(decoupled), np.int32(maximize), np.int32(vmax is not None))
