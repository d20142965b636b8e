"""The RDP math of pullback.dp against its oracles: Opacus's RDPAccountant (epsilon to 1e-6
relative over a grid of sample rate x noise multiplier x steps x delta), dp-accounting's
RdpAccountant at the same orders, and the exact RDP of the subsampled Gaussian (the moment
A_alpha by mpmath quadrature at 50 digits)."""

from __future__ import annotations

import functools
import itertools
import math
import warnings

import numpy as np
import pytest

from pullback.dp import DEFAULT_ORDERS, RDPAccountant, compute_rdp, rdp_to_epsilon

SAMPLE_RATES = (1e-3, 0.01, 0.1, 1.0)
NOISE = (0.5, 1.0, 2.5)
STEPS = (1, 100, 10_000)
DELTAS = (1e-5, 1e-8)


@functools.cache
def ours(q: float, sigma: float) -> np.ndarray:
    return compute_rdp(q, sigma, 1)


@functools.cache
def opacus_rdp(q: float, sigma: float) -> np.ndarray:
    analysis = pytest.importorskip("opacus.accountants.analysis.rdp")
    return analysis.compute_rdp(q=q, noise_multiplier=sigma, steps=1, orders=list(DEFAULT_ORDERS))


def test_the_default_orders_are_opacus_s() -> None:
    accountants = pytest.importorskip("opacus.accountants")
    assert list(DEFAULT_ORDERS) == list(accountants.RDPAccountant.DEFAULT_ALPHAS)


@pytest.mark.parametrize("q,sigma", list(itertools.product(SAMPLE_RATES, NOISE)),
                         ids=lambda v: str(v))
def test_epsilon_equals_opacus_over_the_grid(q: float, sigma: float) -> None:
    accountants = pytest.importorskip("opacus.accountants")
    for steps, delta in itertools.product(STEPS, DELTAS):
        theirs = accountants.RDPAccountant()
        theirs.history = [(sigma, q, steps)]
        with warnings.catch_warnings():  # Opacus warns when the best order is an end one
            warnings.simplefilter("ignore")
            expected, expected_order = theirs.get_privacy_spent(delta=delta)
        mine = RDPAccountant()
        mine.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
        eps, order = mine.get_privacy_spent(delta)
        assert eps == pytest.approx(expected, rel=1e-6), (steps, delta)
        assert order == expected_order


def test_a_history_of_several_phases_equals_opacus() -> None:
    accountants = pytest.importorskip("opacus.accountants")
    phases = [(1.0, 0.01, 300), (2.0, 0.02, 100), (0.8, 0.01, 50)]
    theirs = accountants.RDPAccountant()
    mine = RDPAccountant()
    for sigma, q, n in phases:
        for _ in range(n):
            theirs.step(noise_multiplier=sigma, sample_rate=q)
            mine.step(noise_multiplier=sigma, sample_rate=q)
    assert mine.history == theirs.history
    assert mine.get_epsilon(1e-5) == pytest.approx(theirs.get_epsilon(delta=1e-5), rel=1e-6)


INTEGER_ORDERS = tuple(a for a in DEFAULT_ORDERS if float(a).is_integer())


@pytest.mark.parametrize("q,sigma", [(0.01, 1.0), (0.1, 2.5), (1e-3, 0.5)])
def test_epsilon_agrees_with_dp_accounting(q: float, sigma: float) -> None:
    """At integer orders both compute the same finite binomial sum: equal to 1e-6. At
    fractional orders dp-accounting sums the series' terms without their signs (the binomial
    coefficients alternate past alpha), an upper bound on A_alpha, so its epsilon is at least
    ours (ours is the exact moment, see test_rdp_equals_the_exact_moment): within 1 % on this
    grid (0.2 % at q=0.1, sigma=2.5, 10,000 steps, where a fractional order is the best)."""
    dp_accounting = pytest.importorskip("dp_accounting")
    event = dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma))
    for steps, delta in itertools.product(STEPS, DELTAS):
        mine = RDPAccountant()
        mine.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
        for orders in (INTEGER_ORDERS, DEFAULT_ORDERS):
            theirs = dp_accounting.rdp.RdpAccountant(orders=list(orders))
            theirs.compose(event, steps)
            expected, eps = theirs.get_epsilon(delta), mine.get_epsilon(delta, orders)
            if orders is INTEGER_ORDERS:
                assert eps == pytest.approx(expected, rel=1e-6), (steps, delta)
            else:
                assert expected * (1 - 1e-2) <= eps <= expected * (1 + 1e-12), (steps, delta)


def exact_rdp(q: float, sigma: float, alpha: float) -> float:
    """RDP from A_alpha = E_{x ~ N(0, s^2)} [(1 - q + q exp((2x - 1) / (2 s^2)))^alpha]."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
    moment = mp.quad(lambda x: ((1 - q) + q * mp.exp((2 * x - 1) / (2 * s * s))) ** a
                     * mp.npdf(x, 0, s), [-mp.inf, -10 * s, 0, 1, 10 * s + 1, mp.inf])
    return float(mp.log(moment) / (a - 1))


@pytest.mark.parametrize("q,sigma,alpha", [(0.01, 1.0, 2.0), (0.01, 1.0, 1.5), (0.1, 0.7, 8.0),
                                           (0.1, 0.7, 3.3), (1e-4, 5.0, 1.2), (0.5, 2.0, 12.0)])
def test_rdp_equals_the_exact_moment(q: float, sigma: float, alpha: float) -> None:
    i = DEFAULT_ORDERS.index(alpha)
    assert ours(q, sigma)[i] == pytest.approx(exact_rdp(q, sigma, alpha), rel=1e-6)


def test_full_batches_are_the_gaussian_mechanism() -> None:
    orders = np.array(DEFAULT_ORDERS)
    assert np.allclose(compute_rdp(1.0, 2.0, 5), 5 * orders / (2 * 2.0 ** 2), rtol=1e-12)


def test_edge_cases_of_the_pure_functions() -> None:
    assert not compute_rdp(0.0, 1.0, 100).any()  # never sampled: no privacy spent
    assert np.isinf(compute_rdp(0.5, 0.0, 1)).all()  # no noise: no privacy
    assert rdp_to_epsilon(np.full(len(DEFAULT_ORDERS), np.inf), 1e-5)[0] == math.inf
    # more steps, more noise, larger delta: epsilon moves the right way
    eps = lambda q, s, n, d: rdp_to_epsilon(compute_rdp(q, s, n), d)[0]  # noqa: E731
    assert eps(0.01, 1.0, 200, 1e-5) > eps(0.01, 1.0, 100, 1e-5)
    assert eps(0.01, 2.0, 100, 1e-5) < eps(0.01, 1.0, 100, 1e-5)
    assert eps(0.01, 1.0, 100, 1e-3) < eps(0.01, 1.0, 100, 1e-5)


@pytest.mark.parametrize("call,message", [
    (lambda: compute_rdp(1.5, 1.0, 1), "sample rate q must be in \\[0, 1\\], got 1.5"),
    (lambda: compute_rdp(0.1, -1.0, 1), "noise multiplier must be >= 0, got -1.0"),
    (lambda: compute_rdp(0.1, 1.0, 2.5), "steps must be a non-negative integer, got 2.5"),
    (lambda: rdp_to_epsilon([1.0], 1e-5), f"1 RDP values for {len(DEFAULT_ORDERS)} orders"),
    (lambda: rdp_to_epsilon(np.zeros(len(DEFAULT_ORDERS)), 0.0),
     "delta must be in \\(0, 1\\), got 0.0"),
])
def test_bad_input_is_named(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
