"""Rényi differential privacy (RDP) of the Poisson-subsampled Gaussian mechanism and its
conversion to (epsilon, delta): pure functions of numbers, no state and no tensors.

One step of DP-SGD adds Gaussian noise of standard deviation ``sigma`` (the noise multiplier;
the clipped gradients have sensitivity 1 in these units) to a sum over a batch in which every
example is present with probability ``q``. Its RDP at order ``alpha`` is
``log(A_alpha) / (alpha - 1)`` (Mironov, Talwar and Zhang, "Rényi Differential Privacy of the
Sampled Gaussian Mechanism", 2019, section 3.3), where ``A_alpha`` is the ``alpha``-th moment
of the likelihood ratio of the mixture ``(1 - q) N(0, sigma^2) + q N(1, sigma^2)`` against
``N(0, sigma^2)``. RDP adds up over steps; :func:`rdp_to_epsilon` turns the total into
(epsilon, delta)-DP with Theorem 21 of Balle et al., "Hypothesis Testing Interpretations and
Rényi Differential Privacy" (2020), at the best order.

Everything is computed in log space, since ``A_alpha`` overflows a float long before the
orders in :data:`DEFAULT_ORDERS` end.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from scipy import special

DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)))
"""Opacus's default RDP orders: 1.1 to 10.9 in steps of 0.1, then the integers 12 to 63."""

# A term of the fractional-order series below exp(-30) (relative to A_alpha >= 1) is dropped,
# together with every later one: they decrease from there on (TF Privacy's criterion, which
# Opacus and dp-accounting share, so that the three agree to rounding).
_SERIES_CUTOFF = -30.0
_SERIES_BLOCK = 64  # terms of the series evaluated per round of numpy calls


def _check(q: float, sigma: float) -> None:
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"RDP of the subsampled Gaussian: sample rate q must be in [0, 1], "
                         f"got {q}")
    if not sigma >= 0.0:
        raise ValueError(f"RDP of the subsampled Gaussian: noise multiplier must be >= 0, "
                         f"got {sigma}")


def _log_a_integer(q: float, sigma: float, alpha: int) -> float:
    """log A_alpha for an integer order: a finite binomial sum,
    ``sum_i C(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 sigma^2))``."""
    i = np.arange(alpha + 1, dtype=np.float64)
    log_binom = special.gammaln(alpha + 1) - special.gammaln(i + 1) - special.gammaln(alpha - i + 1)
    terms = log_binom + i * math.log(q) + (alpha - i) * math.log1p(-q) \
        + (i * i - i) / (2 * sigma ** 2)
    return float(special.logsumexp(terms))


def _log_a_fractional(q: float, sigma: float, alpha: float) -> float:
    """log A_alpha for a fractional order: the integral split at ``z0`` (where the two
    Gaussians' likelihood ratio crosses (1-q)/q) into two series whose binomial coefficients
    change sign past ``alpha``; summed in log space with their signs."""
    z0 = sigma ** 2 * math.log(1 / q - 1) + 0.5
    log_terms: list[np.ndarray] = []
    signs: list[np.ndarray] = []
    start = 0
    while True:
        i = np.arange(start, start + _SERIES_BLOCK, dtype=np.float64)
        j = alpha - i
        coef = special.binom(alpha, i)
        log_coef = np.log(np.abs(coef))
        # each half: C(alpha, i) * mixture weights * exp of the Gaussian exponent * the
        # Gaussian tail beyond z0 (log(erfc(x) / 2) = log_ndtr(-x * sqrt 2))
        below = log_coef + i * math.log(q) + j * math.log1p(-q) + (i * i - i) / (2 * sigma ** 2) \
            + special.log_ndtr(-(i - z0) / sigma)
        above = log_coef + j * math.log(q) + i * math.log1p(-q) + (j * j - j) / (2 * sigma ** 2) \
            + special.log_ndtr(-(z0 - j) / sigma)
        small = np.flatnonzero(np.maximum(below, above) < _SERIES_CUTOFF)
        stop = int(small[0]) + 1 if small.size else _SERIES_BLOCK
        sign = np.sign(coef[:stop])
        log_terms += [below[:stop], above[:stop]]
        signs += [sign, sign]
        if small.size:
            break
        start += _SERIES_BLOCK
    total, sign = special.logsumexp(np.concatenate(log_terms), b=np.concatenate(signs),
                                    return_sign=True)
    if sign < 0:  # A_alpha >= 1 mathematically: only a rounding disaster gets here
        raise ArithmeticError(f"RDP of the subsampled Gaussian: the series for order {alpha} "
                              f"(q={q}, sigma={sigma}) summed to a negative value")
    return float(total)


def rdp_subsampled_gaussian(q: float, sigma: float, alpha: float) -> float:
    """The RDP at order ``alpha`` of one step of the Poisson-subsampled Gaussian mechanism.

    Args:
        q: the probability that an example is in the batch, in [0, 1].
        sigma: the noise multiplier (noise std over the clipping norm), >= 0.
        alpha: the Rényi order, > 1.

    Returns:
        The Rényi divergence bound (``inf`` without noise).
    """
    _check(q, sigma)
    if q == 0:
        return 0.0
    if sigma == 0 or math.isinf(alpha):
        return math.inf
    if q == 1.0:  # the plain Gaussian mechanism
        return alpha / (2 * sigma ** 2)
    if float(alpha).is_integer():
        log_a = _log_a_integer(q, sigma, int(alpha))
    else:
        log_a = _log_a_fractional(q, sigma, float(alpha))
    return log_a / (alpha - 1)


def compute_rdp(q: float, noise_multiplier: float, steps: int,
                orders: Sequence[float] = DEFAULT_ORDERS) -> np.ndarray:
    """The RDP of ``steps`` steps of the subsampled Gaussian mechanism at each order.

    Args:
        q: the sample rate of each step, in [0, 1].
        noise_multiplier: the noise std divided by the clipping norm, >= 0.
        steps: how many steps (RDP composes additively).
        orders: the Rényi orders.

    Returns:
        One RDP value per order (float64).

    Example:
        >>> from pullback.dp import compute_rdp, rdp_to_epsilon
        >>> rdp = compute_rdp(q=0.01, noise_multiplier=1.1, steps=1000)
        >>> round(rdp_to_epsilon(rdp, delta=1e-5)[0], 3)
        1.712
    """
    if steps < 0 or int(steps) != steps:
        raise ValueError(f"compute_rdp: steps must be a non-negative integer, got {steps}")
    return np.array([rdp_subsampled_gaussian(q, noise_multiplier, a) for a in orders]) * steps


def rdp_to_epsilon(rdp: Sequence[float], delta: float,
                   orders: Sequence[float] = DEFAULT_ORDERS) -> tuple[float, float]:
    """(epsilon, best order) for an RDP curve at ``delta``: Balle et al. (2020), Theorem 21,
    ``epsilon = rdp - (log(delta) + log(alpha)) / (alpha - 1) + log((alpha - 1) / alpha)``,
    minimized over the orders.

    Args:
        rdp: RDP values, one per order.
        delta: the target delta, in (0, 1).
        orders: the orders of ``rdp``.

    Returns:
        ``(epsilon, alpha)``; ``(inf, nan)`` when no order gives a finite bound.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"rdp_to_epsilon: delta must be in (0, 1), got {delta}")
    alphas = np.asarray(orders, dtype=np.float64)
    values = np.asarray(rdp, dtype=np.float64)
    if alphas.shape != values.shape:
        raise ValueError(f"rdp_to_epsilon: {values.size} RDP values for {alphas.size} orders")
    with np.errstate(invalid="ignore"):  # inf - inf at orders without a bound: NaN, skipped
        eps = values - (math.log(delta) + np.log(alphas)) / (alphas - 1) \
            + np.log((alphas - 1) / alphas)
    if np.isnan(eps).all():
        return math.inf, math.nan
    best = int(np.nanargmin(eps))
    return float(eps[best]), float(alphas[best])
