"""Activations. The elementwise ones are core ops; softmax and log-softmax are nn's fused ops."""

from __future__ import annotations

import pullback
from pullback.dispatch import apply
from pullback.tensor import Tensor

from .._ops.softmax import LOG_SOFTMAX, SOFTMAX

relu = pullback.relu
leaky_relu = pullback.leaky_relu
gelu = pullback.gelu
silu = pullback.silu
tanh = pullback.tanh
sigmoid = pullback.sigmoid
softplus = pullback.softplus


def _axis(where: str, x: Tensor, dim: int | None) -> int:
    if dim is None:
        raise TypeError(f"{where}: give dim= (the axis to normalize over)")
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        from pullback.errors import AxisError

        raise AxisError(f"{where}: dim {dim} is out of range for shape {tuple(x.shape)}")
    return dim % max(x.ndim, 1)


def softmax(input: Tensor, dim: int | None = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    return apply(SOFTMAX, input, axis=_axis("softmax", input, dim))


def log_softmax(input: Tensor, dim: int | None = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (stable)."""
    return apply(LOG_SOFTMAX, input, axis=_axis("log_softmax", input, dim))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``x`` clipped to ``[min_val, max_val]``. As in PyTorch the gradient is 0 on the bounds
    too (``clamp`` passes it there): it flows only strictly inside."""
    inside = (input > min_val) & (input < max_val)
    return pullback.where(inside, input, pullback.clamp(input, min_val, max_val).detach())


def elu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``x`` for positive inputs, ``alpha * (exp(x) - 1)`` otherwise."""
    # expm1 sees only non-positive values, so the unused branch cannot overflow to inf (whose
    # zero gradient would otherwise turn into nan).
    negative = pullback.expm1(pullback.clamp(input, max=0.0)) * alpha
    return pullback.where(input > 0, input, negative)
