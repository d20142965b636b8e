"""The solvers by name (torchdiffeq's names): every one is a subclass of
:class:`~._fixed.FixedGridSolver` or :class:`~._adaptive.AdaptiveRungeKutta`."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from .._dynamics import Dynamics
from ._adaptive import AdaptiveRungeKutta
from ._base import Solver
from ._fixed import FixedGridSolver
from .adams import AdamsBashforth, AdamsBashforthMoulton
from .adaptive_heun import AdaptiveHeun
from .bosh3 import Bosh3
from .dopri5 import Dopri5
from .dopri8 import Dopri8
from .fehlberg2 import Fehlberg2
from .fixed_grid import RK4, Euler, Heun2, Heun3, Midpoint
from .tsit5 import Tsit5

_TABLE: dict[str, type[Solver]] = {
    "dopri8": Dopri8,
    "dopri5": Dopri5,
    "tsit5": Tsit5,
    "bosh3": Bosh3,
    "fehlberg2": Fehlberg2,
    "adaptive_heun": AdaptiveHeun,
    "euler": Euler,
    "midpoint": Midpoint,
    "heun2": Heun2,
    "heun3": Heun3,
    "rk4": RK4,
    "explicit_adams": AdamsBashforth,
    "implicit_adams": AdamsBashforthMoulton,
    "fixed_adams": AdamsBashforthMoulton,  # torchdiffeq's older name of implicit_adams
}

SOLVERS: MappingProxyType[str, type[Solver]] = MappingProxyType(_TABLE)


def make_solver(name: str, fn: Dynamics, y0: Any, rtol: Any, atol: Any,
                options: dict[str, Any]) -> Solver:
    """An instance of the solver registered as ``name`` (options already checked)."""
    solver = _TABLE[name](fn, y0, rtol=rtol, atol=atol, **options)
    solver.name = name  # two names share one class (implicit_adams, fixed_adams)
    return solver


__all__ = ["SOLVERS", "AdaptiveRungeKutta", "FixedGridSolver", "Solver", "make_solver"]
