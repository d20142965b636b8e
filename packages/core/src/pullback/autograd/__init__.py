"""Reverse-mode automatic differentiation: ``grad``, ``backward``, ``Function``, grad modes,
checkpointing and the ``functional`` helpers (jacobian, hessian, hvp, vjp)."""

from . import functional
from .anomaly_mode import (
    detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly,
)
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
    "Function", "FunctionCtx", "backward", "checkpoint", "detect_anomaly", "enable_grad",
    "functional", "grad", "inference_mode", "is_anomaly_check_nan_enabled", "is_anomaly_enabled",
    "is_grad_enabled", "is_inference_mode_enabled", "no_grad", "once_differentiable",
    "queue_callback", "set_detect_anomaly", "set_grad_enabled",
]
