"""Dormand-Prince 5(4): seven stages (six evaluations per step, first same as last)."""

from __future__ import annotations

from ._adaptive import AdaptiveRungeKutta
from ._runge_kutta import ButcherTableau, quartic_dense_output

_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
# Shampine's embedded fourth-order weights (as torchdiffeq's; Dormand and Prince's own are
# 5179/57600, 0, 7571/16695, ...).
_B_EMBEDDED = (1951 / 21600, 0.0, 22642 / 50085, 451 / 720, -12231 / 42400, 649 / 6300, 1 / 60)
# Shampine's weights of the state at mid-step, for the dense output.
_MID = (6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2,
        -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
        -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2)

TABLEAU = ButcherTableau(
    c=(1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
    a=((1 / 5,),
       (3 / 40, 9 / 40),
       (44 / 45, -56 / 15, 32 / 9),
       (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
       (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
       _B[:-1]),
    b=_B,
    b_error=tuple(b - e for b, e in zip(_B, _B_EMBEDDED)),
    dense=quartic_dense_output(_B, _MID),
)


class Dopri5(AdaptiveRungeKutta):
    """Dormand-Prince 5(4) with Shampine's dense output (torchdiffeq's and odeint's default)."""

    order = 5
    tableau = TABLEAU
