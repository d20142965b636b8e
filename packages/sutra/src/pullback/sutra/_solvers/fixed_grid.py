"""The fixed-grid Runge-Kutta methods: each is its tableau and its order."""

from __future__ import annotations

from ._fixed import FixedRungeKutta
from ._runge_kutta import ButcherTableau


class Euler(FixedRungeKutta):
    """Forward Euler: one evaluation per step, order 1."""

    order = 1
    tableau = ButcherTableau(c=(), a=(), b=(1.0,))


class Midpoint(FixedRungeKutta):
    """The explicit midpoint method: two evaluations per step, order 2."""

    order = 2
    tableau = ButcherTableau(c=(1 / 2,), a=((1 / 2,),), b=(0.0, 1.0))


class Heun2(FixedRungeKutta):
    """Heun's method (the explicit trapezoidal rule): order 2."""

    order = 2
    tableau = ButcherTableau(c=(1.0,), a=((1.0,),), b=(1 / 2, 1 / 2))


class Heun3(FixedRungeKutta):
    """Heun's third-order method: three evaluations per step."""

    order = 3
    tableau = ButcherTableau(c=(1 / 3, 2 / 3), a=((1 / 3,), (0.0, 2 / 3)), b=(1 / 4, 0.0, 3 / 4))


class RK4(FixedRungeKutta):
    """The classical fourth-order method in Kutta's 3/8 form (torchdiffeq's ``rk4``: slightly
    smaller error than the 1/6 form for the same four evaluations)."""

    order = 4
    tableau = ButcherTableau(c=(1 / 3, 2 / 3, 1.0),
                             a=((1 / 3,), (-1 / 3, 1.0), (1.0, -1.0, 1.0)),
                             b=(1 / 8, 3 / 8, 3 / 8, 1 / 8))
