"""pullback.cuda: the ``cuda`` device (CuPy on NVIDIA GPUs) and hand-written CUDA kernels.

Importing it needs no GPU and no CuPy: ``is_available()`` then says False and
``unavailable_reason()`` says why. Tensors go to a GPU with ``x.to("cuda")`` (or
``device="cuda:1"``), and to or from PyTorch, JAX and CuPy without a copy through DLPack
(``pullback.from_dlpack``, ``torch.from_dlpack(x)``).

Example::

    import pullback as pb
    import pullback.cuda

    if pullback.cuda.is_available():
        x = pb.randn(1024, 1024, device="cuda")
        y = (x @ x).sum()
        pullback.cuda.synchronize()
    else:
        print(pullback.cuda.unavailable_reason())
"""

from __future__ import annotations

from typing import Any

from pullback.plugins import ensure_registered

from . import amp
from .__about__ import __version__
from ._kernels.adamw import fused_adam_
from ._kernels.adamw import unsupported_reason as _adam_unsupported
from ._switches import KERNELS, custom_kernels_enabled, use_custom_kernels

ensure_registered("pullback.cuda._plugin", "cuda", "pullback-cuda")

__all__ = [
    "KERNELS", "__version__", "amp", "custom_kernels_enabled", "device_count", "fused_adamw_",
    "fused_adamw_supported", "is_available", "manual_seed", "manual_seed_all", "memory_info",
    "synchronize",
    "unavailable_reason", "use_custom_kernels",
]


def _backend() -> Any:
    from pullback.backends import get_backend

    return get_backend("cuda")


def is_available() -> bool:
    """Whether CuPy imports and at least one CUDA device is usable (creates no CUDA context)."""
    return bool(_backend().is_available())


def unavailable_reason() -> str | None:
    """Why ``cuda`` is unavailable (CuPy missing, no driver, no device), or ``None``."""
    return _backend().unavailable_reason()


def device_count() -> int:
    """Number of usable CUDA devices (0 when unavailable)."""
    return int(_backend().device_count())


def manual_seed(seed: int) -> None:
    """Seed the generators of every CUDA device (``torch.cuda.manual_seed``; without a GPU it
    changes nothing, as PyTorch's). ``pullback.manual_seed`` seeds them too."""
    _backend().manual_seed(int(seed))


manual_seed_all = manual_seed  # CuPy's generators are per device, all reseeded by one call


def synchronize(index: int = 0) -> None:
    """Wait until the work queued on ``cuda:index`` has finished."""
    _backend().synchronize(index)


def memory_info(index: int = 0) -> dict[str, int] | None:
    """``{"free", "total", "used_by_pool", "held_by_pool"}`` in bytes for ``cuda:index``:
    the device's free and total memory, and what CuPy's memory pool hands out and holds."""
    return _backend().memory_info(index)


def fused_adamw_supported(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any,
                          max_exp_avg_sq: Any = None) -> bool:
    """Whether :func:`fused_adamw_` can update these (float32, contiguous, one shape, on one
    GPU) and the ``adamw`` kernel is switched on. Tensors or CuPy arrays."""
    return custom_kernels_enabled()["adamw"] and _adam_unsupported(
        param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq) is None


def fused_adamw_(param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any, *, lr: float,
                 beta1: float, beta2: float, eps: float, weight_decay: float, step: int,
                 maximize: bool = False, max_exp_avg_sq: Any = None,
                 decoupled_weight_decay: bool = True) -> None:
    """One AdamW step on a CUDA parameter, in place, in a single kernel launch.

    The same update as ``pullback.optim.AdamW`` (``torch.optim.AdamW``): ``param`` is decayed by
    ``1 - lr * weight_decay``, ``exp_avg`` and ``exp_avg_sq`` are updated with ``grad``, and
    ``param`` moves by ``lr / (1 - beta1**step) * exp_avg / (sqrt(v / (1 - beta2**step)) +
    eps)``, where ``v`` is ``exp_avg_sq``, or its running maximum ``max_exp_avg_sq`` (AMSGrad)
    when that is given. ``decoupled_weight_decay=False`` gives Adam's L2 decay instead.

    Args:
        param, grad, exp_avg, exp_avg_sq: Tensors or CuPy arrays, float32, contiguous, one
            shape, one GPU. ``grad`` is only read.
        lr, beta1, beta2, eps, weight_decay: the hyper-parameters.
        step: the step number, counted from 1 (after incrementing it for this step).
        maximize: ascend instead of descend.
        max_exp_avg_sq: AMSGrad's running maximum of ``exp_avg_sq`` (updated in place).
        decoupled_weight_decay: AdamW's decay (True) or Adam's L2 penalty (False).
    """
    fused_adam_(param, grad, exp_avg, exp_avg_sq, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                weight_decay=weight_decay, step=step, decoupled=decoupled_weight_decay,
                maximize=maximize, max_exp_avg_sq=max_exp_avg_sq)
