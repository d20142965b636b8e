"""Fit the rational approximation behind pullback's float32 ``erf`` on the CPU.

erf(x) = x * P(x^2) / Q(x^2) on |x| <= 4 (beyond it erf rounds to +-1 in float32), with P of
degree 6 and Q of degree 5, Q(0) = 1. The fit is a linearized least-squares problem,
P(t) - f(t) (Q(t) - 1) = f(t) with f = erf(x)/x, reweighted (Lawson's iteration) towards the
minimax error measured in float32 ulps of erf. Rounding the coefficients to float32 afterwards
would cost several ulps, so they are fixed one at a time at their float32 value and the others
refitted around them.

It prints the coefficients pasted into ``packages/core/src/pullback/_ops/_erf32.py`` and the
error and speed of that module's float32 evaluation against SciPy's.

Run: python tools/fit_erf32.py
"""

from __future__ import annotations

import time

import numpy as np
from scipy.special import erf

P_TERMS, Q_TERMS = 7, 6  # Q's constant term is fixed at 1
_X = np.linspace(0.0, 4.0, 80_001)[1:]
_T = _X * _X
_F = erf(_X) / _X
_ULP_OVER_X = np.spacing(erf(_X).astype(np.float32)).astype(np.float64) / _X
# Unknowns: P's coefficients, then Q's from degree 1.
_DESIGN = np.concatenate([_T[:, None] ** np.arange(P_TERMS),
                          -_F[:, None] * _T[:, None] ** np.arange(1, Q_TERMS)], axis=1)


def _error_ulp(coef: np.ndarray) -> np.ndarray:
    p, q = coef[:P_TERMS], np.concatenate([[1.0], coef[P_TERMS:]])
    return np.abs(np.polyval(p[::-1], _T) / np.polyval(q[::-1], _T) - _F) / _ULP_OVER_X


def _lawson(coef: np.ndarray, fixed: np.ndarray, iterations: int) -> np.ndarray:
    """Refit the coefficients not ``fixed``, weighting towards the largest ulp errors."""
    weight = 1.0 / _ULP_OVER_X
    free = ~fixed
    for _ in range(iterations):
        w = (weight / weight.mean())[:, None]
        rhs = _F - _DESIGN[:, fixed] @ coef[fixed]
        coef[free] = np.linalg.lstsq(_DESIGN[:, free] * w, rhs * w[:, 0], rcond=None)[0]
        err = _error_ulp(coef)
        weight = weight * np.sqrt(err / err.mean())
    return coef


def fit() -> tuple[np.ndarray, np.ndarray]:
    n = P_TERMS + Q_TERMS - 1
    fixed = np.zeros(n, dtype=bool)
    coef = _lawson(np.zeros(n), fixed, 80)
    print(f"fit error, float64 coefficients: {_error_ulp(coef).max():.3f} ulp")
    for k in range(n):
        coef[k] = np.float32(coef[k])
        fixed[k] = True
        if not fixed.all():
            coef = _lawson(coef, fixed, 40)
    print(f"fit error, float32 coefficients: {_error_ulp(coef).max():.3f} ulp")
    return coef[:P_TERMS], np.concatenate([[1.0], coef[P_TERMS:]])


def _timed(fn, x: np.ndarray) -> float:
    start = time.perf_counter()
    fn(x)
    return time.perf_counter() - start


def main() -> None:
    p, q = fit()
    print("P =", ", ".join(f"{np.float32(c)!r}" for c in p))
    print("Q =", ", ".join(f"{np.float32(c)!r}" for c in q))
    from pullback._ops._erf32 import erf32

    x = np.concatenate([np.linspace(-6, 6, 1 << 21, dtype=np.float32),
                        np.float32([0.0, 1e-30, -1e-38, 1e-5])])
    exact = erf(x.astype(np.float64))
    ulp = np.spacing(np.abs(exact).astype(np.float32))
    got = erf32(x)
    print(f"pullback's float32 erf: max {(np.abs(got - exact) / ulp).max():.2f} ulp, "
          f"max absolute error {np.abs(got - exact).max():.2e}")
    block = np.random.default_rng(0).standard_normal(1 << 16).astype(np.float32)  # fits in L2
    for name, fn in (("scipy.special.erf", erf), ("pullback erf32", erf32)):
        seconds = min(_timed(fn, block) for _ in range(200))
        print(f"{name}: {seconds / block.size * 1e9:.1f} ns per float32 element")


if __name__ == "__main__":
    main()
