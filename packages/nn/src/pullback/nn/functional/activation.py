"""Activations (PyTorch's ``torch.nn.functional`` names and arguments).

relu, leaky_relu, gelu, silu, tanh, sigmoid and softplus are core ops; softmax and log-softmax
are nn's fused ops; the rest are compositions of core ops whose gradients are PyTorch's,
including at the kinks (``where`` picks the branch PyTorch's backward uses there). ``inplace``
is accepted everywhere PyTorch takes it; the result is a new tensor with the same values.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

import pullback
from pullback._autocast_policy import autocast_function
from pullback.dispatch import apply
from pullback.errors import ArgumentError, ShapeError
from pullback.tensor import Tensor

from .._ops.softmax import LOG_SOFTMAX, SOFTMAX

tanh = pullback.tanh
sigmoid = pullback.sigmoid

# SELU's constants (Klambauer et al.), as PyTorch writes them.
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)`` (the gradient at 0 is 0)."""
    return pullback.relu(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``x`` for x > 0, ``negative_slope * x`` otherwise."""
    return pullback.leaky_relu(input, negative_slope)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate="tanh"`` for the tanh approximation."""
    return pullback.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    return pullback.silu(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta x)) / beta``, linear above ``threshold``."""
    return pullback.softplus(input, beta, threshold)


def _axis(where: str, x: Tensor, dim: int | None, stacklevel: int = 4) -> int:
    if dim is None:  # PyTorch's implicit choice, with its warning
        warnings.warn(f"Implicit dimension choice for {where} has been deprecated. Change the "
                      "call to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    if not -max(x.ndim, 1) <= dim < max(x.ndim, 1):
        from pullback.errors import AxisError

        raise AxisError(f"{where}: dim {dim} is out of range for shape {tuple(x.shape)}")
    return dim % max(x.ndim, 1)


def _cast(input: Tensor, dtype: Any) -> Tensor:
    return input if dtype is None else input.to(dtype)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim`` (``dtype``: cast the input first)."""
    axis = _axis("softmax", input, dim, _stacklevel + 1)
    return apply(SOFTMAX, _cast(input, dtype), axis=axis)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: Any = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (stable; ``dtype``: cast the input first)."""
    axis = _axis("log_softmax", input, dim, _stacklevel + 1)
    return apply(LOG_SOFTMAX, _cast(input, dtype), axis=axis)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """``softmax(-x)`` along ``dim``."""
    axis = _axis("softmin", input, dim, _stacklevel + 1)
    return apply(SOFTMAX, -_cast(input, dtype), axis=axis)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax distribution (``softmax((logits + g) / tau)`` with Gumbel
    noise ``g`` from the seeded generator); ``hard`` returns one-hot samples whose gradient is
    the soft sample's (the straight-through estimator)."""
    u = pullback.rand(*logits.shape, dtype=logits.dtype, device=logits.device)
    gumbels = -pullback.log(-pullback.log(u + eps) + eps)
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.detach().argmax(dim, keepdim=True)
    one_hot = pullback.zeros_like(soft).scatter_add(
        dim, index, pullback.ones(*index.shape, dtype=soft.dtype, device=soft.device))
    return one_hot - soft.detach() + soft


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``x`` clipped to ``[min_val, max_val]``. As in PyTorch the gradient is 0 on the bounds
    too (``clamp`` passes it there): it flows only strictly inside."""
    inside = (input > min_val) & (input < max_val)
    return pullback.where(inside, input, pullback.clamp(input, min_val, max_val).detach())


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(x, 0), 6)`` (hardtanh on [0, 6])."""
    return hardtanh(input, 0.0, 6.0)


# PyTorch's hardsigmoid backward multiplies by 1/6 rounded to float32 (``1.0f / 6.0f``), in
# float64 too; the forward divides by 6 exactly. Both are kept, so that float64 agrees to 1e-10.
_ONE_SIXTH_F32 = float(np.float32(1.0) / np.float32(6.0))


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``: 0 below -3, 1 above 3, linear between."""
    inside = hardtanh(input, -3.0, 3.0)
    sloped = inside * _ONE_SIXTH_F32
    return sloped + (inside / 6 - sloped).detach() + 0.5


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6`` (MobileNetV3)."""
    # PyTorch's backward: 0 up to -3 included, the parabola's slope strictly inside, 1 from 3.
    middle = input * (input + 3) / 6
    return pullback.where(input <= -3, input * 0, pullback.where(input < 3, middle, input))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``x`` for positive inputs, ``alpha * (exp(x) - 1)`` otherwise."""
    # expm1 sees only non-positive values, so the unused branch cannot overflow to inf (whose
    # zero gradient would otherwise turn into nan).
    negative = pullback.expm1(pullback.clamp(input, max=0.0)) * alpha
    return pullback.where(input > 0, input, negative)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise ArgumentError("celu: alpha must not be 0")
    negative = pullback.expm1(pullback.clamp(input, max=0.0) / alpha) * alpha
    return pullback.where(input > 0, input, negative)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(x, alpha)`` with SELU's self-normalizing constants."""
    return elu(input, SELU_ALPHA) * SELU_SCALE


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return input * pullback.tanh(pullback.softplus(input, threshold=math.inf))


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``, stable for any ``x``."""
    return -pullback.softplus(-input, threshold=math.inf)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return input / (pullback.abs(input) + 1)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``."""
    return input - pullback.tanh(input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    if lambd < 0:
        raise ArgumentError(f"softshrink: lambd must be non-negative, got {lambd}")
    shrunk = input - pullback.clamp(input, -lambd, lambd).detach()
    return pullback.where(pullback.abs(input) > lambd, shrunk, input * 0)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, 0 elsewhere."""
    return pullback.where(pullback.abs(input) > lambd, input, input * 0)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``x`` where ``x > threshold``, ``value`` elsewhere."""
    return pullback.where(input > threshold, input, input * 0 + value)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the halves ``a, b`` of ``dim`` give ``a * sigmoid(b)``."""
    axis = _axis("glu", input, dim)
    if input.shape[axis] % 2:
        raise ShapeError(f"glu: axis {dim} of shape {tuple(input.shape)} must have an even size")
    a, b = pullback.chunk(input, 2, axis)
    return a * pullback.sigmoid(b)


@autocast_function("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``max(0, x) + weight * min(0, x)``; ``weight`` has one value or one per channel (axis 1)."""
    if weight.ndim > 1 or (weight.numel() != 1 and (input.ndim < 2 or weight.numel() != input.shape[1])):
        raise ShapeError(f"prelu: weight of shape {tuple(weight.shape)} needs 1 value or one per "
                         f"channel of an input of shape {tuple(input.shape)}")
    if weight.numel() != 1:
        weight = weight.reshape((1, -1) + (1,) * (input.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return pullback.where(input > 0, input, input * weight)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: in training each negative input gets a slope drawn from
    U(lower, upper) (the seeded generator); otherwise the mean slope ``(lower + upper) / 2``."""
    if not 0 <= lower <= upper:
        raise ArgumentError(f"rrelu: need 0 <= lower <= upper, got {lower} and {upper}")
    if not training:
        return pullback.leaky_relu(input, (lower + upper) / 2)
    u = pullback.rand(*input.shape, dtype=input.dtype, device=input.device)
    slope = u * (upper - lower) + lower
    return pullback.where(input > 0, input, input * slope)
