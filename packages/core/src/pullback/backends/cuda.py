"""``torch.backends.cuda``: the CUDA math switches ported scripts set.

``matmul.allow_tf32``, ``matmul.allow_fp16_reduced_precision_reduction`` and the
scaled-dot-product-attention kernel switches (``enable_flash_sdp``...) are accepted and recorded;
pullback's CUDA backend (pullback-cuda) computes float32 products in float32 whatever they say,
and its attention has one kernel. ``is_built()`` says whether a ``cuda`` backend is installed.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator


class _MatmulSwitches:
    """``torch.backends.cuda.matmul``: settable, without effect."""

    def __init__(self) -> None:
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "ieee"


matmul = _MatmulSwitches()
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether a ``cuda`` backend is installed (pullback-cuda), usable here or not."""
    from . import backends

    return "cuda" in backends()


def enable_flash_sdp(enabled: bool) -> None:
    """Recorded, without effect (one attention kernel)."""
    _SDP["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Recorded, without effect (one attention kernel)."""
    _SDP["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Recorded, without effect (one attention kernel)."""
    _SDP["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Recorded, without effect (no cuDNN)."""
    _SDP["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """What :func:`enable_flash_sdp` last set."""
    return _SDP["flash"]


def mem_efficient_sdp_enabled() -> bool:
    """What :func:`enable_mem_efficient_sdp` last set."""
    return _SDP["mem_efficient"]


def math_sdp_enabled() -> bool:
    """What :func:`enable_math_sdp` last set."""
    return _SDP["math"]


def cudnn_sdp_enabled() -> bool:
    """What :func:`enable_cudnn_sdp` last set."""
    return _SDP["cudnn"]


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[None]:
    """PyTorch's deprecated context manager for the attention switches (with its warning)."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context "
                  "manager will be removed. Please see `torch.nn.attention.sdpa_kernel()` for "
                  "the new context manager, with updated signature.", FutureWarning, stacklevel=3)
    before = dict(_SDP)
    _SDP.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _SDP.update(before)


def preferred_linalg_library(backend: Any = None) -> Any:
    """Accepted, without effect; returns the library named (PyTorch's default: "default")."""
    return backend if backend is not None else "default"


def preferred_blas_library(backend: Any = None) -> Any:
    """Accepted, without effect; returns the library named (PyTorch's default: "cublas")."""
    return backend if backend is not None else "cublas"
