"""Numerical composition of privacy loss random variables (PRVs): pure functions of numbers.

Gopi, Lee and Wutschitz, "Numerical Composition of Differential Privacy" (NeurIPS 2021). A
mechanism's privacy is described exactly by the distribution of its privacy loss
``L(X) = log(P(X) / Q(X))`` with ``X ~ P``; composing mechanisms adds their losses, so the
distribution of the sum is the convolution of theirs. The PRV of each step is truncated to a
domain ``[-L, L]`` (``L`` from an RDP bound, so that the cut mass is negligible), discretized on
a mesh fine enough for the requested epsilon error, composed by FFT (``n`` identical steps as a
power of the Fourier transform, different ones by convolution), and epsilon read off the
discrete result. The result is an upper bound on epsilon: its estimate plus the error bound.

For one step of DP-SGD the pair is ``P = (1 - q) N(0, s^2) + q N(1, s^2)`` and
``Q = N(0, s^2)`` (an example removed from a Poisson batch, sensitivity 1, noise multiplier
``s``), whose loss is ``L(x) = log(1 - q + q exp((2x - 1) / (2 s^2)))``, increasing in ``x``:
the loss's CDF is the mixture's CDF at ``x(t) = L^{-1}(t)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import integrate, signal, special

from ._rdp import compute_rdp, rdp_to_epsilon


def _normal_mass(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``P(a < Z <= b)`` for a standard normal ``Z``, elementwise; computed from the survival
    function in the upper tail so that small masses far right do not vanish in ``1 - 1``."""
    upper = a > 0
    return np.where(upper, special.ndtr(-a) - special.ndtr(-b), special.ndtr(b) - special.ndtr(a))


def _smallest_loss(q: float) -> float:
    """``log(1 - q)``, the loss of an output far left (``-inf`` for the full batch, ``q = 1``)."""
    return -math.inf if q == 1 else math.log1p(-q)


@dataclass(frozen=True)
class SubsampledGaussianPRV:
    """The privacy loss of one step of the Poisson-subsampled Gaussian mechanism.

    Attributes:
        sample_rate: ``q``, the probability that an example is in the batch.
        noise_multiplier: ``s``, the noise std over the clipping norm.
    """

    sample_rate: float
    noise_multiplier: float

    def output_at_loss(self, t: np.ndarray) -> np.ndarray:
        """``x(t)``, the output whose privacy loss is ``t`` (``-inf`` below the smallest loss,
        ``log(1 - q)``)."""
        q, s = self.sample_rate, self.noise_multiplier
        t = np.asarray(t, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            # e^t - (1 - q) = expm1(t) + q, accurate near t = 0
            x = s * s * (np.log(np.expm1(t) + q) - math.log(q)) + 0.5
        return np.where(t > _smallest_loss(q), x, -np.inf)

    def mass(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``P(lo < L(X) <= hi)``, elementwise."""
        q, s = self.sample_rate, self.noise_multiplier
        xl, xh = self.output_at_loss(lo), self.output_at_loss(hi)
        return q * _normal_mass((xl - 1) / s, (xh - 1) / s) \
            + (1 - q) * _normal_mass(xl / s, xh / s)

    def partial_mean(self, lo: float, hi: float) -> float:
        """``E[L(X); lo < L(X) <= hi]``: the integral of ``L(x)`` against the mixture's density
        over the outputs whose loss is in the interval."""
        q, s = self.sample_rate, self.noise_multiplier
        log_keep, log_q = _smallest_loss(q), math.log(q)

        def integrand(x: float) -> float:
            loss = np.logaddexp(log_keep, log_q + (2 * x - 1) / (2 * s * s))
            density = (1 - q) * math.exp(-0.5 * (x / s) ** 2) \
                + q * math.exp(-0.5 * ((x - 1) / s) ** 2)
            return float(loss) * density / (s * math.sqrt(2 * math.pi))

        # Beyond 40 std of both Gaussians the density is below 1e-300: nothing to integrate.
        xl = max(float(self.output_at_loss(lo)), -40 * s)
        xh = min(float(self.output_at_loss(hi)), 1 + 40 * s)
        if xl >= xh:
            return 0.0
        breaks = [p for p in (0.0, 0.5, 1.0) if xl < p < xh]
        value, _ = integrate.quad(integrand, xl, xh, points=breaks or None, limit=500,
                                  epsabs=1e-14, epsrel=1e-12)
        return value


@dataclass(frozen=True)
class Grid:
    """Equally spaced losses ``(first + i) * step + shift`` for ``i`` in ``range(size)``:
    ``first`` is an integer (the grid is aligned to multiples of ``step``, so that composed
    grids line up), ``shift`` the offset that matches the discrete mean to the continuous one."""

    first: int
    size: int
    step: float
    shift: float = 0.0

    @classmethod
    def covering(cls, lo: float, hi: float, step: float) -> Grid:
        """The aligned grid from ``floor(lo / step)`` to ``ceil(hi / step)``, with an even
        number of points (the real FFT of an even size splits the spectrum evenly)."""
        first, last = math.floor(lo / step), math.ceil(hi / step)
        size = last - first + 1
        return cls(first, size + size % 2, step)

    @property
    def points(self) -> np.ndarray:
        return (self.first + np.arange(self.size)) * self.step + self.shift

    @property
    def lo(self) -> float:
        return self.first * self.step + self.shift

    @property
    def hi(self) -> float:
        return (self.first + self.size - 1) * self.step + self.shift


@dataclass(frozen=True)
class DiscretePRV:
    """A privacy loss distribution on a grid: ``pmf[i]`` is the probability of ``grid.points[i]``."""

    pmf: np.ndarray
    grid: Grid


def discretize(prv: SubsampledGaussianPRV, grid: Grid) -> DiscretePRV:
    """``prv`` truncated to ``[grid.lo, grid.hi]``, each point holding the mass of the interval of
    width ``step`` around it, and the grid shifted so that the discrete mean equals the truncated
    continuous mean (Gopi et al.'s mean-preserving discretization)."""
    if grid.shift:
        raise ValueError("discretize: the grid must not be shifted yet")
    t = grid.points
    half = grid.step / 2
    lo = np.maximum(t - half, grid.lo)
    hi = np.minimum(t + half, grid.hi)
    kept = float(prv.mass(np.array(grid.lo), np.array(grid.hi)))
    pmf = prv.mass(lo, hi) / kept
    shift = prv.partial_mean(grid.lo, grid.hi) / kept - float(t @ pmf)
    if abs(shift) >= half:
        raise ArithmeticError(f"PRV accountant: the discrete mean of {prv} is {abs(shift):.3g} "
                              f"away from the continuous one, more than half the mesh "
                              f"({half:.3g}); the mesh is too coarse for this mechanism")
    return DiscretePRV(pmf, Grid(grid.first, grid.size, grid.step, shift))


def self_compose(prv: DiscretePRV, times: int) -> DiscretePRV:
    """The distribution of the sum of ``times`` independent copies, on a grid of the same size.

    The sum of ``times`` points ``(first + i_k) * step + shift`` is
    ``(times * first + sum i_k) * step + times * shift``: index ``sum i_k`` of the (circular)
    convolution power lands on index ``sum i_k + (times - 1) * first`` of the grid
    ``(first + j) * step + times * shift``, hence the roll. Mass beyond the grid wraps around;
    the domain is chosen (:func:`domain_half_width`) so that it is negligible.
    """
    g = prv.grid
    power = np.fft.irfft(np.fft.rfft(prv.pmf) ** times, n=g.size)
    pmf = np.roll(power, (times - 1) * g.first)
    return DiscretePRV(pmf, Grid(g.first, g.size, g.step, g.shift * times))


def compose(left: DiscretePRV, right: DiscretePRV) -> DiscretePRV:
    """The distribution of the sum of two independent PRVs on the same aligned grid: their
    linear convolution, cut to the window of the grid (points ``first + j``, ``j = k + first``
    for index ``k`` of the convolution)."""
    a, b = left.grid, right.grid
    if (a.first, a.size, a.step) != (b.first, b.size, b.step):
        raise ValueError("compose: the two PRVs must be on the same grid")
    full = signal.fftconvolve(left.pmf, right.pmf)
    start = -a.first
    return DiscretePRV(full[start:start + a.size], Grid(a.first, a.size, a.step, a.shift + b.shift))


def epsilon_at(prv: DiscretePRV, delta: float) -> float:
    """The smallest epsilon with ``delta(epsilon) <= delta`` for the discrete PRV, where
    ``delta(eps) = E[(1 - exp(eps - L))^+]`` (the hockey-stick divergence).

    For ``eps`` between grid points ``t[i-1]`` and ``t[i]``, ``delta(eps) = tail[i] -
    exp(eps) * tail_weighted[i]`` with ``tail[i] = P(L >= t[i])`` and ``tail_weighted[i] =
    E[exp(-L); L >= t[i]]``, which is solved for ``eps`` exactly.
    """
    t, p = prv.grid.points, prv.pmf
    tail = np.cumsum(p[::-1])[::-1]
    tail_weighted = np.cumsum((p * np.exp(-t))[::-1])[::-1]
    delta_at_points = tail - np.exp(t) * tail_weighted
    below = np.flatnonzero(delta_at_points <= delta)
    if below.size == 0 or below[0] == 0:
        raise ArithmeticError(f"PRV accountant: delta={delta} is outside the range this "
                              f"discretization resolves (losses {prv.grid.lo:.3g} to "
                              f"{prv.grid.hi:.3g})")
    i = int(below[0])
    return math.log((tail[i] - delta) / tail_weighted[i])


def domain_half_width(history: Sequence[tuple[float, float, int]], eps_error: float,
                      delta_error: float) -> float:
    """``L`` such that truncating every step's PRV to ``[-L, L]`` loses at most ``delta_error``
    (Gopi et al., remark 5.6, as their reference implementation bounds it with RDP): the RDP
    epsilon of the whole composition at ``delta_error / 4`` and of each single step at
    ``delta_error / (8 * steps)``, plus a margin of 3."""
    total = sum(n for _, _, n in history)
    whole = sum(compute_rdp(q, sigma, n) for sigma, q, n in history)
    bound = rdp_to_epsilon(whole, delta_error / 4)[0]
    for sigma, q, _ in history:
        bound = max(bound, rdp_to_epsilon(compute_rdp(q, sigma, 1), delta_error / (8 * total))[0])
    return max(bound, eps_error) + 3


def prv_epsilon(history: Sequence[tuple[float, float, int]], delta: float,
                eps_error: float = 0.01, delta_error: float | None = None) -> float:
    """An upper bound on epsilon at ``delta`` after the steps of ``history``.

    Args:
        history: ``(noise_multiplier, sample_rate, steps)`` triples.
        delta: the target delta, in (0, 1).
        eps_error: the allowed error of the epsilon estimate (the mesh follows from it).
        delta_error: the allowed error in delta (default ``delta / 1000``).

    Returns:
        The epsilon estimate at ``delta - delta_error`` plus ``eps_error``: Gopi et al.'s
        upper bound.
    """
    if not 0.0 < delta < 1.0:
        raise ValueError(f"prv_epsilon: delta must be in (0, 1), got {delta}")
    delta_error = delta / 1000 if delta_error is None else delta_error
    if not history:
        return 0.0
    if any(sigma == 0 for sigma, _, _ in history):
        return math.inf
    total = sum(n for _, _, n in history)
    half_width = domain_half_width(history, eps_error, delta_error)
    mesh = eps_error / math.sqrt(total * math.log(12 / delta_error) / 2)
    grid = Grid.covering(-half_width, half_width, mesh)
    if np.finfo(np.float64).eps * grid.size > delta - delta_error:
        raise ArithmeticError(f"PRV accountant: delta={delta} is too small for a grid of "
                              f"{grid.size} points (rounding errors would dominate); use a "
                              "larger delta or eps_error, or the RDP accountant")
    composed = None
    for sigma, q, n in history:
        step = self_compose(discretize(SubsampledGaussianPRV(q, sigma), grid), n)
        composed = step if composed is None else compose(composed, step)
    assert composed is not None
    return epsilon_at(composed, delta - delta_error) + eps_error
