"""Every solver's empirical order of convergence is its theoretical order: the slope of
log(error) against log(step) on a smooth nonlinear, time-dependent problem with a closed form,
the logistic dy/dt = y (1 - y) cos(t), y(0) = 1/2, so y = 1 / (1 + exp(-sin t)).

dopri8's error reaches rounding there before its asymptotic range, so it runs on dy/dt = y^2,
y(0) = 1 (y = 1 / (1 - t)) up to t = 1/2, where its slope approaches 8 from below instead.

Adaptive solvers run at a fixed step (first_step = min_step = max_step: a step at min_step is
always accepted), so the slope is that of the solution they propagate. The steps are chosen
per order in the asymptotic range and above rounding; a slope "is" order p when it rounds to p.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pullback.sutra import SOLVERS, odeint
from sutra_cases import ADAPTIVE, FIXED, METHODS, tensor

# From the literature, not from the solvers' own attributes (a test below checks those).
THEORETICAL = {"euler": 1, "midpoint": 2, "heun2": 2, "heun3": 3, "rk4": 4, "adaptive_heun": 2,
               "fehlberg2": 2, "bosh3": 3, "dopri5": 5, "tsit5": 5, "dopri8": 8,
               # torchdiffeq's Adams: RK4 for the first two steps, then orders rising to
               # max_order. Explicit: its first Adams step is AB3 (one O(h^4) error). Implicit:
               # that step's corrector is four-value Adams-Moulton (O(h^5)), so order 5.
               "explicit_adams": 4, "implicit_adams": 5, "fixed_adams": 5}
STEPS_PER_UNIT = {1: (16, 32, 64), 2: (16, 32, 64), 3: (16, 32, 64), 4: (16, 32, 64),
                  5: (8, 16, 32), 8: (4, 8, 16)}


def exact(t: float) -> float:
    return 1.0 / (1.0 + math.exp(-math.sin(t)))


def rhs(t, y):
    return y * (1 - y) * t.cos()


# (dynamics, y0, end time, exact solution at the end)
LOGISTIC = (rhs, 0.5, 3.0, exact(3.0))
BLOW_UP = (lambda t, y: y * y, 1.0, 0.5, 2.0)


def fixed_step_options(method: str, h: float) -> dict:
    if method in FIXED:
        # explicit_adams at max_order=12 is unstable (as in torchdiffeq); 5 keeps order 4.
        return {"step_size": h, **({"max_order": 5} if method == "explicit_adams" else {})}
    return {"first_step": h, "min_step": h, "max_step": h}


def slope(steps: list[float], errors: list[float]) -> float:
    assert min(errors) > 5e-14, f"errors {errors} reach rounding: take larger steps"
    return float(np.polyfit(np.log(steps), np.log(errors), 1)[0])


def test_the_table_names_every_solver_and_matches_their_order_attribute() -> None:
    assert set(THEORETICAL) == set(METHODS)
    assert {m: SOLVERS[m].order for m in METHODS} == THEORETICAL


@pytest.mark.parametrize("method", METHODS)
def test_order_of_the_solution(method: str) -> None:
    order = THEORETICAL[method]
    func, y0, end, y_end = BLOW_UP if method == "dopri8" else LOGISTIC
    steps, errors = [], []
    for per_unit in STEPS_PER_UNIT[order]:
        h = 1.0 / per_unit
        y = odeint(func, tensor([y0]), tensor([0.0, end]), method=method,
                   options=fixed_step_options(method, h))
        steps.append(h)
        errors.append(abs(float(y[1, 0]) - y_end))
    assert round(slope(steps, errors)) == order, (steps, errors, slope(steps, errors))


@pytest.mark.parametrize("method, interp, expected", [
    ("euler", "linear", 1), ("midpoint", "linear", 2), ("rk4", "linear", 2), ("rk4", "cubic", 4)])
def test_order_of_fixed_grid_interpolation(method: str, interp: str, expected: int) -> None:
    # Output in the middle of a step: linear interpolation is O(h^2), cubic Hermite O(h^4).
    steps, errors = [], []
    for per_unit in (16, 32, 64):
        h = 1.0 / per_unit
        t_out = 1.5 + h / 2
        y = odeint(rhs, tensor([0.5]), tensor([0.0, t_out, 1.5 + h]), method=method,
                   options={"step_size": h, "interp": interp})
        steps.append(h)
        errors.append(abs(float(y[1, 0]) - exact(t_out)))
    assert round(slope(steps, errors)) == expected, (errors, slope(steps, errors))


def test_adaptive_and_fixed_lists_cover_the_registry() -> None:
    assert sorted(ADAPTIVE + FIXED) == METHODS


def test_tsit5_dense_output_is_tsitouras_interpolant() -> None:
    # The table holds the polynomials expanded; the paper (and diffrax) give them factored.
    from pullback.sutra._solvers.tsit5 import TABLEAU
    from sutra_cases import tsit5_dense_weights

    for theta in np.linspace(0.0, 1.0, 7):
        ours = dict(TABLEAU.dense_weights(float(theta)))
        np.testing.assert_allclose([ours.get(i, 0.0) for i in range(7)],
                                   tsit5_dense_weights(float(theta)), rtol=0, atol=1e-14)
    # At theta = 1 the weights are the solution's.
    at_end = dict(TABLEAU.dense_weights(1.0))
    np.testing.assert_allclose([at_end.get(i, 0.0) for i in range(7)], TABLEAU.b, atol=1e-14)
