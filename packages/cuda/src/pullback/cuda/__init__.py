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

import pullback._cuda_absent as _absent
from pullback.plugins import ensure_registered

from . import amp
from .__about__ import __version__
from ._device_api import (
    DeviceProperties, current_device, device, device_of, empty_cache, get_arch_list,
    get_device_capability, get_device_name, get_device_properties, init, is_bf16_supported,
    is_initialized, is_tf32_supported, max_memory_allocated, max_memory_reserved, mem_get_info,
    memory_allocated, memory_reserved, memory_stats, reset_peak_memory_stats, set_device,
)
from ._kernels.adamw import fused_adam_
from ._kernels.adamw import unsupported_reason as _adam_unsupported
from ._switches import KERNELS, custom_kernels_enabled, use_custom_kernels

ensure_registered("pullback.cuda._plugin", "cuda", "pullback-cuda")

__all__ = [
    "DeviceProperties", "KERNELS", "__version__", "amp", "current_device", "custom_kernels_enabled",
    "device", "device_count", "device_of", "empty_cache", "fused_adamw_", "fused_adamw_supported",
    "get_arch_list", "get_device_capability", "get_device_name", "get_device_properties",
    "get_rng_state", "get_rng_state_all", "init", "initial_seed", "is_available", "is_bf16_supported",
    "is_initialized", "is_tf32_supported", "manual_seed", "manual_seed_all", "max_memory_allocated",
    "max_memory_reserved", "mem_get_info", "memory_allocated", "memory_info", "memory_reserved",
    "memory_stats", "reset_max_memory_allocated", "reset_peak_memory_stats", "seed", "seed_all",
    "set_device", "set_rng_state", "set_rng_state_all", "synchronize", "unavailable_reason",
    "use_custom_kernels",
]

reset_max_memory_allocated = reset_peak_memory_stats


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


def synchronize(device: Any = None) -> None:
    """Wait until the work queued on a GPU (``cuda:0`` by default; an index, ``"cuda:1"`` or a
    Device) has finished."""
    if not is_available():
        _absent.synchronize(device)
    _backend().synchronize(0 if device is None else _absent.device_index(device))


def seed() -> None:
    """Seed every CUDA generator with a random number (refused without a GPU: ignored)."""
    if is_available():
        import secrets

        manual_seed(secrets.randbits(63))


seed_all = seed


def initial_seed() -> int:
    """The seed of the CUDA generators (refused without a GPU, as PyTorch's)."""
    if not is_available():
        return _absent.initial_seed()
    return int(_backend().get_rng_state()["seed"])


def get_rng_state(device: Any = "cuda") -> dict[str, Any]:
    """The CUDA generators' state as a JSON-serializable dict (PyTorch's is a ByteTensor);
    refused without a GPU, as PyTorch's."""
    if not is_available():
        return _absent.get_rng_state(device)
    return _backend().get_rng_state()


def set_rng_state(new_state: Any, device: Any = "cuda") -> None:
    """Restore :func:`get_rng_state` (ignored without a GPU, as PyTorch's)."""
    if is_available():
        _backend().set_rng_state(new_state)


def get_rng_state_all() -> list[Any]:
    """The CUDA generators' state, one JSON-serializable dict per device (``[]`` without a
    GPU; PyTorch's are ByteTensors)."""
    if not is_available():
        return _absent.get_rng_state_all()
    return [get_rng_state()] * device_count()


def set_rng_state_all(states: Any) -> None:
    """Restore :func:`get_rng_state_all` (ignored without a GPU, as PyTorch's)."""
    states = list(states)
    if states:
        set_rng_state(states[0])


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
