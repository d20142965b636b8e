"""Bogacki-Shampine 3(2): four stages, first same as last."""

from __future__ import annotations

from ._adaptive import AdaptiveRungeKutta
from ._runge_kutta import ButcherTableau, quartic_dense_output

_B = (2 / 9, 1 / 3, 4 / 9, 0.0)
_B_EMBEDDED = (7 / 24, 1 / 4, 1 / 3, 1 / 8)

TABLEAU = ButcherTableau(
    c=(1 / 2, 3 / 4, 1.0),
    a=((1 / 2,), (0.0, 3 / 4), _B[:-1]),
    b=_B,
    b_error=tuple(b - e for b, e in zip(_B, _B_EMBEDDED)),
    dense=quartic_dense_output(_B, (0.0, 0.5, 0.0, 0.0)),
)


class Bosh3(AdaptiveRungeKutta):
    """Bogacki-Shampine 3(2)."""

    order = 3
    tableau = TABLEAU
