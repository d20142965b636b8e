"""Heun's method with an Euler error estimate: two stages.

Its dense output is the cubic Hermite interpolant with the stage rates as slopes (second order
between steps); torchdiffeq's quartic goes through a mid-step Euler estimate y0 + dt/2 k_0, which
makes it first order between steps.
"""

from __future__ import annotations

from ._adaptive import AdaptiveRungeKutta
from ._runge_kutta import ButcherTableau, hermite_dense_output

_B = (1 / 2, 1 / 2)

TABLEAU = ButcherTableau(
    c=(1.0,),
    a=((1.0,),),
    b=_B,
    b_error=(1 / 2, -1 / 2),
    dense=hermite_dense_output(_B),
)


class AdaptiveHeun(AdaptiveRungeKutta):
    """Heun 2(1), adaptive."""

    order = 2
    tableau = TABLEAU
