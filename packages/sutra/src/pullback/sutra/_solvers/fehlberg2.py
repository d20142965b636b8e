"""Runge-Kutta-Fehlberg 2(1): three stages."""

from __future__ import annotations

from ._adaptive import AdaptiveRungeKutta
from ._runge_kutta import ButcherTableau, quartic_dense_output

_B = (1 / 512, 255 / 256, 1 / 512)

TABLEAU = ButcherTableau(
    c=(1 / 2, 1.0),
    a=((1 / 2,), (1 / 256, 255 / 256)),
    b=_B,
    b_error=(-1 / 512, 0.0, 1 / 512),
    dense=quartic_dense_output(_B, (0.0, 0.5, 0.0)),
)


class Fehlberg2(AdaptiveRungeKutta):
    """Runge-Kutta-Fehlberg 2(1): the second-order solution is propagated, and the next step
    starts from the rate of the first-order one, as in torchdiffeq."""

    order = 2
    tableau = TABLEAU
