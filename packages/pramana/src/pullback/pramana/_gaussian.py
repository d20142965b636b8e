"""Closed-form moments of functions of Gaussian variables: pure functions of Tensors.

Every function here takes the mean ``mu`` and variance ``var`` of independent Gaussian inputs
(elementwise, any shape) and returns the mean and variance of the output, written with
differentiable pullback ops so that gradients flow through both streams.

References: the rectified Gaussian (Frey & Hinton 1999; Wu et al. 2019, "Deterministic
Variational Inference for Robust Bayesian Neural Networks"), and Clark (1961), "The greatest of a
finite set of random variables", for the maximum of two Gaussians.
"""

from __future__ import annotations

import math

import pullback
from pullback import Tensor

_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# Standard deviations below this count as zero: the moments fall back to those of the point mass
# (dividing by the standard deviation would give 0/0).
TINY_STD = 1e-12


def normal_pdf(z: Tensor) -> Tensor:
    """The standard normal density phi(z)."""
    return pullback.exp(-0.5 * z * z) * _INV_SQRT_2PI


def normal_cdf(z: Tensor) -> Tensor:
    """The standard normal distribution function Phi(z)."""
    return 0.5 * (1.0 + pullback.erf(z * _INV_SQRT_2))


def _safe_std(var: Tensor) -> tuple[Tensor, Tensor]:
    """The standard deviation, with exact zeros replaced by 1 (and the mask of those zeros), so
    that ``mu / std`` stays finite; callers select the point-mass answer where the mask is set."""
    std = pullback.sqrt(var)
    degenerate = std <= TINY_STD
    return pullback.where(degenerate, 1.0, std), degenerate


def relu_moments(mu: Tensor, var: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Mean, variance and second moment of ``max(x, 0)`` for ``x ~ N(mu, var)`` (exact).

    ``E[relu(x)] = mu Phi(a) + s phi(a)`` and ``E[relu(x)^2] = (mu^2 + s^2) Phi(a) + mu s phi(a)``
    with ``s = sqrt(var)`` and ``a = mu / s``.
    """
    std, degenerate = _safe_std(var)
    alpha = mu / std
    cdf, pdf = normal_cdf(alpha), normal_pdf(alpha)
    mean = mu * cdf + std * pdf
    second = (mu * mu + var) * cdf + mu * std * pdf
    point = pullback.relu(mu)
    mean = pullback.where(degenerate, point, mean)
    second = pullback.where(degenerate, point * point, second)
    # Rounding can make the difference slightly negative where the output is nearly constant.
    return mean, pullback.relu(second - mean * mean), second


def leaky_relu_moments(mu: Tensor, var: Tensor, slope: float) -> tuple[Tensor, Tensor]:
    """Mean and variance of ``leaky_relu(x) = slope*x + (1 - slope)*relu(x)`` (exact).

    ``Cov(x, relu(x)) = E[relu(x)^2] - mu E[relu(x)]``, because ``x relu(x) = relu(x)^2``.
    """
    r_mean, r_var, r_second = relu_moments(mu, var)
    keep = 1.0 - slope
    mean = slope * mu + keep * r_mean
    cov = r_second - mu * r_mean
    variance = slope * slope * var + keep * keep * r_var + 2.0 * slope * keep * cov
    return mean, pullback.relu(variance)


def max_moments(mu1: Tensor, var1: Tensor, mu2: Tensor, var2: Tensor) -> tuple[Tensor, Tensor]:
    """Clark's moments of ``max(x1, x2)`` for independent Gaussians ``x1``, ``x2``.

    The mean and variance are exact for the pair; treating the result as Gaussian again (to take
    the max of more than two, as max pooling does) is Clark's approximation.
    """
    theta, degenerate = _safe_std(var1 + var2)
    alpha = (mu1 - mu2) / theta
    cdf, cdf_neg, pdf = normal_cdf(alpha), normal_cdf(-alpha), normal_pdf(alpha)
    mean = mu1 * cdf + mu2 * cdf_neg + theta * pdf
    second = (mu1 * mu1 + var1) * cdf + (mu2 * mu2 + var2) * cdf_neg + (mu1 + mu2) * theta * pdf
    point = pullback.maximum(mu1, mu2)
    mean = pullback.where(degenerate, point, mean)
    second = pullback.where(degenerate, point * point, second)
    return mean, pullback.relu(second - mean * mean)
