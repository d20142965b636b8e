"""Moment propagation as functions of :class:`DistributionalTensor` (``pramana.functional``).

The layer classes and :func:`pullback.pramana.propagate`'s rules for ``pullback.nn`` modules
both call these, so each moment formula is written once.
"""

from __future__ import annotations

import math
from typing import Any

import pullback
from pullback import Tensor
from pullback.nn import functional as F

from ._gaussian import leaky_relu_moments, max_moments, relu_moments
from ._smooth import METHODS, SMOOTH, delta_moments, quadrature_moments
from ._tensor import DistributionalTensor, as_distributional

__all__ = [
    "avg_pool2d", "batch_norm_eval", "bayesian_conv2d", "bayesian_linear", "conv2d",
    "gaussian_kl", "dropout", "leaky_relu", "linear", "max_pool2d",
    "relu", "smooth", "softmax_mean", "variance_floor",
]


def linear(input: Any, weight: Tensor, bias: Tensor | None = None) -> DistributionalTensor:
    """``x W^T + b`` with deterministic ``W``: variance through the squared weights (exact)."""
    x = as_distributional(input)
    if x.shape[-1:] != tuple(weight.shape[-1:]):
        raise pullback.ShapeError(f"pramana.linear: input of shape {x.shape} does not match "
                                  f"weight of shape {tuple(weight.shape)}")
    return DistributionalTensor._new(F.linear(x.mean, weight, bias),
                                     F.linear(x.var, weight * weight))


def conv2d(input: Any, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> DistributionalTensor:
    """2-d convolution with deterministic weights and zero padding (exact)."""
    x = as_distributional(input)
    mean = F.conv2d(x.mean, weight, bias, stride, padding, dilation, groups)
    var = F.conv2d(x.var, weight * weight, None, stride, padding, dilation, groups)
    return DistributionalTensor._new(mean, var)


def bayesian_linear(input: Any, weight: Tensor, weight_log_var: Tensor, bias: Tensor | None = None,
                    bias_log_var: Tensor | None = None) -> DistributionalTensor:
    """``x W^T + b`` with Gaussian weights ``W ~ N(weight, exp(weight_log_var))`` (and bias),
    independent of ``x``: the variance gains ``exp(weight_log_var) (E[x]^2 + Var[x])`` (exact)."""
    x = as_distributional(input)
    y = linear(x, weight, bias)
    var = y.var + F.linear(x.mean * x.mean + x.var, pullback.exp(weight_log_var))
    if bias_log_var is not None:
        var = var + pullback.exp(bias_log_var)
    return DistributionalTensor._new(y.mean, var)


def bayesian_conv2d(input: Any, weight: Tensor, weight_log_var: Tensor, bias: Tensor | None = None,
                    bias_log_var: Tensor | None = None, stride: Any = 1, padding: Any = 0,
                    dilation: Any = 1, groups: int = 1) -> DistributionalTensor:
    """2-d convolution with Gaussian weights (and bias), as :func:`bayesian_linear`."""
    x = as_distributional(input)
    y = conv2d(x, weight, bias, stride, padding, dilation, groups)
    bias_var = None if bias_log_var is None else pullback.exp(bias_log_var)
    var = y.var + F.conv2d(x.mean * x.mean + x.var, pullback.exp(weight_log_var), bias_var,
                           stride, padding, dilation, groups)
    return DistributionalTensor._new(y.mean, var)


def gaussian_kl(mean: Tensor, log_var: Tensor, prior_var: float) -> Tensor:
    """``KL(N(mean, exp(log_var)) || N(0, prior_var))``, summed over all entries."""
    ratio = (pullback.exp(log_var) + mean * mean) / prior_var
    return 0.5 * (ratio - 1.0 - log_var + math.log(prior_var)).sum()


def relu(input: Any) -> DistributionalTensor:
    """The rectified Gaussian's mean and variance (exact)."""
    x = as_distributional(input)
    mean, var, _ = relu_moments(x.mean, x.var)
    return DistributionalTensor._new(mean, var)


def leaky_relu(input: Any, negative_slope: float = 0.01) -> DistributionalTensor:
    """LeakyReLU of a Gaussian (exact)."""
    x = as_distributional(input)
    return DistributionalTensor._new(*leaky_relu_moments(x.mean, x.var, negative_slope))


def smooth(name: str, input: Any, method: str = "quadrature", *, second_order: bool = True,
           nodes: int = 8) -> DistributionalTensor:
    """A registered smooth activation (``"tanh"``, ``"sigmoid"``, ``"gelu"``, ``"silu"``,
    ``"softplus"``) of a Gaussian.

    Args:
        name: the activation.
        input: a DistributionalTensor (or a Tensor: a point mass).
        method: ``"delta"`` (Taylor expansion; first or second order) or ``"quadrature"``
            (``nodes``-point Gauss-Hermite, accurate at large variances; see
            :mod:`pullback.pramana._smooth` and docs/pramana.md for the measured errors).
        second_order: with the delta method, add the second-order terms.
        nodes: with quadrature, the number of nodes.
    """
    if name not in SMOOTH:
        raise ValueError(f"pramana.smooth: no moment rule for {name!r} "
                         f"(known: {', '.join(sorted(SMOOTH))})")
    if method not in METHODS:
        raise ValueError(f"pramana.smooth: method must be one of {METHODS}, got {method!r}")
    x = as_distributional(input)
    if method == "quadrature":
        return DistributionalTensor._new(*quadrature_moments(name, x.mean, x.var, nodes))
    return DistributionalTensor._new(*delta_moments(name, x.mean, x.var, second_order))


def _pair(value: Any) -> tuple[int, int]:
    return (int(value), int(value)) if isinstance(value, int) else (int(value[0]), int(value[1]))


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None) -> DistributionalTensor:
    """Max pooling by Clark's approximation: the window's entries are folded one at a time with
    the exact moments of the max of two Gaussians, each partial max treated as Gaussian again."""
    x = as_distributional(input)
    if x.ndim != 4:
        raise pullback.ShapeError(f"pramana.max_pool2d: expected (N, C, H, W), got shape {x.shape}")
    (kh, kw) = _pair(kernel_size)
    (sh, sw) = _pair(stride) if stride is not None else (kh, kw)
    h_out, w_out = (x.shape[2] - kh) // sh + 1, (x.shape[3] - kw) // sw + 1
    if h_out < 1 or w_out < 1:
        raise pullback.ShapeError(f"pramana.max_pool2d: kernel {(kh, kw)} is larger than the "
                                  f"input {x.shape[2:]}")
    mean = var = None
    for i in range(kh):
        for j in range(kw):
            rows = slice(i, i + sh * (h_out - 1) + 1, sh)
            cols = slice(j, j + sw * (w_out - 1) + 1, sw)
            m, v = x.mean[:, :, rows, cols], x.var[:, :, rows, cols]
            mean, var = (m, v) if mean is None else max_moments(mean, var, m, v)
    return DistributionalTensor._new(mean, var)


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> DistributionalTensor:
    """Average pooling (exact), arguments as :func:`pullback.nn.functional.avg_pool2d`.

    Each output is ``sum(x_i) / d`` over its window, so its variance is ``sum(var_i) / d**2``,
    which is the pooled variance divided once more by ``d``. The divisor ``d`` of every window
    (which padding, ``ceil_mode`` and the counting options change) is read off the pool itself:
    the window's entry count (a sum pool of ones, ``divisor_override=1``) over its average of
    ones."""
    x = as_distributional(input)

    def pool(t: Tensor, divisor: int | None = divisor_override) -> Tensor:
        return F.avg_pool2d(t, kernel_size, stride, padding, ceil_mode=ceil_mode,
                            count_include_pad=count_include_pad, divisor_override=divisor)

    ones = pullback.ones(x.shape[1:], dtype=x.dtype, device=x.device).unsqueeze(0)
    divisor = pool(ones, 1) / pool(ones)
    return DistributionalTensor._new(pool(x.mean), pool(x.var) / divisor)


def dropout(input: Any, p: float = 0.5) -> DistributionalTensor:
    """Inverted dropout as variance injection: ``y = x m / (1 - p)``, ``m ~ Bernoulli(1 - p)``
    has mean ``E[x]`` and variance ``(Var[x] + E[x]^2) / (1 - p) - E[x]^2`` (exact)."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"pramana.dropout: p must be in [0, 1), got {p}")
    x = as_distributional(input)
    if p == 0.0:
        return x
    square = x.mean * x.mean
    return DistributionalTensor._new(x.mean, (x.var + square) / (1.0 - p) - square)


def batch_norm_eval(input: Any, running_mean: Tensor, running_var: Tensor,
                    weight: Tensor | None, bias: Tensor | None, eps: float) -> DistributionalTensor:
    """Batch norm with frozen statistics: an affine map per channel (axis 1), exact."""
    x = as_distributional(input)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = pullback.rsqrt(running_var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    scale, shift = scale.reshape(shape), shift.reshape(shape)
    return DistributionalTensor._new(x.mean * scale + shift, x.var * (scale * scale))


def softmax_mean(input: Any, dim: int = -1) -> Tensor:
    """An approximation of ``E[softmax(z)]`` for Gaussian logits ``z``: the mean-field (probit)
    form ``softmax(mean / sqrt(1 + pi var / 8))`` (Lu, Ie and Sha 2020, "Mean-field approximations
    to the softmax"). Each logit is shrunk towards zero by its own uncertainty, so uncertain
    logits give flatter probabilities (a higher predictive entropy). The error is measured in the
    tests and listed in docs/pramana.md."""
    x = as_distributional(input)
    return F.softmax(x.mean * pullback.rsqrt(1.0 + (math.pi / 8.0) * x.var), dim=dim)


def variance_floor(input: Any, floor: float) -> DistributionalTensor:
    """Clamp the variance at ``floor``."""
    if floor < 0:
        raise ValueError(f"pramana.variance_floor: floor must be non-negative, got {floor}")
    x = as_distributional(input)
    return DistributionalTensor._new(x.mean, pullback.clamp(x.var, min=floor))
