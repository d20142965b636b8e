"""Moments of smooth activations: the delta method, and Gauss-Hermite quadrature.

For a smooth ``f`` and ``x ~ N(mu, var)``:

* the delta method expands ``f`` around ``mu``. First order: ``E[f(x)] ~ f(mu)``,
  ``Var[f(x)] ~ f'(mu)^2 var``. The second-order terms are cheap since ``f''`` is known in closed
  form: ``E[f(x)] ~ f(mu) + f''(mu) var / 2``, ``Var[f(x)] ~ f'(mu)^2 var + f''(mu)^2 var^2 / 2``
  (both exact when ``f`` is quadratic). It degrades where the variance is large against the
  curvature's scale, and its variance is poor near stationary points (GELU's minimum);
* Gauss-Hermite quadrature with ``K`` nodes, ``E[g(x)] ~ sum_k w_k g(mu + sqrt(2 var) t_k) /
  sqrt(pi)``, is exact for polynomials of degree below ``2K`` and costs ``K`` evaluations of
  ``f`` per element (still one deterministic pass).

Each activation is registered by name with ``f`` and a function giving ``(f, f', f'')``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

import pullback
from pullback import Tensor

from ._gaussian import normal_cdf, normal_pdf

METHODS = ("delta", "quadrature")


@dataclass(frozen=True)
class SmoothActivation:
    """A registered activation: ``f`` itself and ``derivatives(mu) -> (f, f', f'')``."""

    f: Callable[[Tensor], Tensor]
    derivatives: Callable[[Tensor], tuple[Tensor, Tensor, Tensor]]


SMOOTH: dict[str, SmoothActivation] = {}


def register_smooth(name: str, f: Callable[[Tensor], Tensor],
                    derivatives: Callable[[Tensor], tuple[Tensor, Tensor, Tensor]]) -> None:
    """Register a smooth activation: its function and ``(f, f', f'')`` at a point."""
    SMOOTH[name] = SmoothActivation(f, derivatives)


def _tanh(mu: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    t = pullback.tanh(mu)
    d1 = 1.0 - t * t
    return t, d1, -2.0 * t * d1


def _sigmoid(mu: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    s = pullback.sigmoid(mu)
    d1 = s * (1.0 - s)
    return s, d1, d1 * (1.0 - 2.0 * s)


def _gelu(mu: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    cdf, pdf = normal_cdf(mu), normal_pdf(mu)
    return mu * cdf, cdf + mu * pdf, pdf * (2.0 - mu * mu)


def _silu(mu: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    s = pullback.sigmoid(mu)
    ds = s * (1.0 - s)
    return mu * s, s + mu * ds, ds * (2.0 + mu * (1.0 - 2.0 * s))


def _softplus(mu: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    s = pullback.sigmoid(mu)
    return pullback.softplus(mu), s, s * (1.0 - s)


register_smooth("tanh", pullback.tanh, _tanh)
register_smooth("sigmoid", pullback.sigmoid, _sigmoid)
register_smooth("gelu", lambda x: x * normal_cdf(x), _gelu)
register_smooth("silu", pullback.silu, _silu)
register_smooth("softplus", pullback.softplus, _softplus)


def delta_moments(name: str, mu: Tensor, var: Tensor,
                  second_order: bool = True) -> tuple[Tensor, Tensor]:
    """Mean and variance of ``f(x)``, ``x ~ N(mu, var)``, by the delta method."""
    f, d1, d2 = SMOOTH[name].derivatives(mu)
    variance = d1 * d1 * var
    if not second_order:
        return f, variance
    return f + 0.5 * d2 * var, variance + 0.5 * d2 * d2 * var * var


@lru_cache(maxsize=None)
def _hermite(nodes: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Gauss-Hermite points scaled for a standard normal (``sqrt 2 t``) and weights (``/sqrt pi``)."""
    t, w = np.polynomial.hermite.hermgauss(nodes)
    return tuple(float(v) for v in t * math.sqrt(2.0)), tuple(float(v) for v in w / math.sqrt(math.pi))


def quadrature_moments(name: str, mu: Tensor, var: Tensor,
                       nodes: int = 8) -> tuple[Tensor, Tensor]:
    """Mean and variance of ``f(x)``, ``x ~ N(mu, var)``, by ``nodes``-point Gauss-Hermite
    quadrature (the variance summed as ``sum w (f - mean)^2``, which cannot go negative)."""
    if nodes < 1:
        raise ValueError(f"quadrature_moments: nodes must be at least 1, got {nodes}")
    points, weights = _hermite(nodes)
    std = pullback.sqrt(var)
    f = SMOOTH[name].f
    values = [f(mu + p * std) for p in points]
    mean = sum(w * v for w, v in zip(weights, values))
    variance = sum(w * (v - mean) * (v - mean) for w, v in zip(weights, values))
    return mean, variance
