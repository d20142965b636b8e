"""Heun's method with an Euler error estimate: two stages."""

from __future__ import annotations

from ._adaptive import AdaptiveRungeKutta
from ._runge_kutta import ButcherTableau, quartic_dense_output

_B = (1 / 2, 1 / 2)

TABLEAU = ButcherTableau(
    c=(1.0,),
    a=((1.0,),),
    b=_B,
    b_error=(1 / 2, -1 / 2),
    dense=quartic_dense_output(_B, (0.5, 0.0)),
)


class AdaptiveHeun(AdaptiveRungeKutta):
    """Heun 2(1), adaptive."""

    order = 2
    tableau = TABLEAU
