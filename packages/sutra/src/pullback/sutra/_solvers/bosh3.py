"""Bogacki-Shampine 3(2): four stages, first same as last.

Its dense output is the cubic Hermite interpolant (third order). torchdiffeq's is its quartic
through a mid-step estimate y0 + dt/2 k_2, which is only second order: off by dt^2 g/8 on a
parabola, so events and output times between steps are less accurate there.
"""

from __future__ import annotations

from ._adaptive import AdaptiveRungeKutta
from ._runge_kutta import ButcherTableau, hermite_dense_output

_B = (2 / 9, 1 / 3, 4 / 9, 0.0)
_B_EMBEDDED = (7 / 24, 1 / 4, 1 / 3, 1 / 8)

TABLEAU = ButcherTableau(
    c=(1 / 2, 3 / 4, 1.0),
    a=((1 / 2,), (0.0, 3 / 4), _B[:-1]),
    b=_B,
    b_error=tuple(b - e for b, e in zip(_B, _B_EMBEDDED)),
    dense=hermite_dense_output(_B),
)


class Bosh3(AdaptiveRungeKutta):
    """Bogacki-Shampine 3(2)."""

    order = 3
    tableau = TABLEAU
