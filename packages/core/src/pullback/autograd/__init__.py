"""Reverse-mode automatic differentiation: ``grad``, ``backward``, ``Function``, grad modes,
checkpointing and the ``functional`` helpers (jacobian, hessian, hvp, vjp)."""

from . import functional
from .api import backward, grad
from .checkpoint import checkpoint
from .engine import queue_callback
from .function import Function, FunctionCtx, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

__all__ = [
    "Function", "FunctionCtx", "backward", "checkpoint", "enable_grad", "functional", "grad",
    "inference_mode", "is_grad_enabled", "is_inference_mode_enabled", "no_grad",
    "once_differentiable", "queue_callback", "set_grad_enabled",
]
