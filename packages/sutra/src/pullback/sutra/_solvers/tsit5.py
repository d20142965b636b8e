"""Tsitouras 5(4) (Computers & Mathematics with Applications 62, 2011): seven stages, first same
as last, with Tsitouras's own dense output. Not in torchdiffeq 0.2.5; diffrax's default."""

from __future__ import annotations

from ._adaptive import AdaptiveRungeKutta
from ._runge_kutta import ButcherTableau

_B = (0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
      2.324710524099774, 0.0)
_B_EMBEDDED = (0.09468075576583945, 0.009183565540343254, 0.4877705284247616,
               1.234297566930479, -2.7077123499835256, 1.866628418170587, 1 / 66)

TABLEAU = ButcherTableau(
    c=(0.161, 0.327, 0.9, 0.9800255409045097, 1.0, 1.0),
    a=((0.161,),
       (-0.008480655492356989, 0.335480655492357),
       (2.897153057105493, -6.359448489975075, 4.3622954328695815),
       (5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525),
       (5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401,
        -0.028269050394068383),
       _B[:-1]),
    b=_B,
    b_error=tuple(b - e for b, e in zip(_B, _B_EMBEDDED)),
    # The coefficients of theta .. theta^4 of each stage's weight: Tsitouras's b_i(theta),
    # expanded from the factored form of the paper. It is the quartic through y0, y1, f0, f1
    # and y(1/2), like the other solvers' (a test checks it against that fit).
    dense=((1.0, -2.763706197274826, 2.9132554618219126, -1.0530884977290216),
           (0.0, 0.1317, -0.2234, 0.1017),
           (0.0, 3.930296236894751, -5.941033872131505, 2.490627285651253),
           (0.0, -12.411077166933676, 30.338188630282318, -16.548102889244902),
           (0.0, 37.50931341651104, -88.1789048947664, 47.37952196281928),
           (0.0, -27.896526289197286, 65.09189467479368, -34.87065786149661),
           (0.0, 1.5, -4.0, 2.5)),
)


class Tsit5(AdaptiveRungeKutta):
    """Tsitouras 5(4): the same cost as dopri5 with smaller error constants."""

    order = 5
    tableau = TABLEAU
