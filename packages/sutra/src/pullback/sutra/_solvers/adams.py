"""Adams methods on a fixed grid: Adams-Bashforth (explicit) and Adams-Bashforth-Moulton
(predictor-corrector), as torchdiffeq runs them.

Each step evaluates ``func`` once at its start and keeps the last ``max_order - 1`` rates; the
first steps, with too short a history, are RK4 (3/8) steps. The corrector iterates at most
``max_iters`` times, until two iterates agree within rtol/atol in the max norm.

The coefficients come from their definition (exact fractions), not from a table: with
``gamma_i`` the coefficients of the backward-difference form, ``sum_j gamma_j / (i + 1 - j)``
is 1 for Bashforth and 0 (for i > 0) for Moulton.
"""

from __future__ import annotations

import collections
import warnings
from fractions import Fraction
from math import comb
from typing import Any, Callable

from .._dynamics import Dynamics, as_array, time_value
from .._norms import error_ratio, linf_norm
from ._fixed import FixedGridSolver
from ._runge_kutta import Pairs, combine, nonzero, stages
from .fixed_grid import RK4

MAX_ORDER = 12
MIN_ORDER = 4  # below this many past rates the step is RK4


def _adams_coefficients(steps: int, implicit: bool) -> list[float]:
    """Weights of the ``steps`` most recent rates (the newest first; for Moulton the newest is
    the rate at the end of the step)."""
    gamma: list[Fraction] = []
    for i in range(steps):
        target = Fraction(0 if implicit and i > 0 else 1)
        gamma.append(target - sum((gamma[j] / (i + 1 - j) for j in range(i)), Fraction(0)))
    return [float((-1) ** j * sum(gamma[i] * comb(i, j) for i in range(j, steps)))
            for j in range(steps)]


BASHFORTH = [None] + [nonzero(_adams_coefficients(k, False)) for k in range(1, MAX_ORDER + 1)]
MOULTON = [None] + [_adams_coefficients(k, True) for k in range(1, MAX_ORDER + 1)]


class AdamsBashforthMoulton(FixedGridSolver):
    """Adams-Bashforth predictor, Adams-Moulton corrector (``implicit_adams``, ``fixed_adams``).

    Options (besides the fixed-grid ones):
        max_order: the longest history used, at most 12.
        max_iters: corrector iterations per step (the explicit method does none).
    """

    # Global order 5 at max_order >= 5 (torchdiffeq labels it 4): the two RK4 starting steps
    # and the first corrector (four-value Adams-Moulton) each err by O(h^5) once, and every
    # later step is of higher order. (The explicit method's first Adams step is AB3: order 4.)
    order = 5
    implicit = True

    def __init__(self, fn: Dynamics, y0: Any, *, rtol: Any, atol: Any,
                 step_size: float | None = None,
                 grid_constructor: Callable[[list[float]], list[float]] | None = None,
                 perturb: bool = False, interp: str = "linear", max_order: int = MAX_ORDER,
                 max_iters: int = 4) -> None:
        super().__init__(fn, y0, rtol=rtol, atol=atol, step_size=step_size,
                         grid_constructor=grid_constructor, perturb=perturb, interp=interp)
        if int(max_order) > MAX_ORDER:
            raise ValueError(f"{fn.name}: max_order must be at most {MAX_ORDER}, got {max_order}")
        if int(max_order) < MIN_ORDER:
            warnings.warn(f"{fn.name}: max_order={max_order} is below {MIN_ORDER}, so every step "
                          "is an RK4 step", stacklevel=2)
        self.max_order, self.max_iters = int(max_order), int(max_iters)
        self.history: collections.deque[Any] = collections.deque(maxlen=max(self.max_order - 1, 1))
        self.history_time: float | None = None

    def step(self, t0: Any, dt: Any, t1: Any, y0: Any, f0: Any) -> tuple[Any, Any]:
        if f0 is None:
            f0 = self.fn(t0, y0, self.start_perturb)
        if time_value(t0) != self.history_time:
            self.history.appendleft(f0)
            self.history_time = time_value(t0)
        order = min(len(self.history), self.max_order - 1)
        if order < MIN_ORDER - 1:
            ks, _ = stages(self.fn, RK4.tableau, t0, t1, dt, y0, f0, self.end_perturb)
            return combine(RK4.tableau.b_pairs, ks, dt), f0
        dy = combine(BASHFORTH[order], self.history, dt)
        if self.implicit:
            dy = self._correct(t1, dt, y0, dy, order)
        return dy, f0

    def _correct(self, t1: Any, dt: Any, y0: Any, dy: Any, order: int) -> Any:
        weights = MOULTON[order + 1]
        past: Pairs = nonzero(weights[1:])
        delta = combine(past, self.history, dt)
        for _ in range(self.max_iters):
            previous = dy
            dy = self.fn(t1, y0 + dy, self.end_perturb) * (weights[0] * dt) + delta
            a, b = as_array(previous), as_array(dy)
            if error_ratio(linf_norm, self.xp, abs(a - b), a, b, self.rtol, self.atol) < 1:
                return dy
        warnings.warn(f"{self.fn.name}: the {self.name} corrector did not converge in "
                      f"{self.max_iters} iterations at t={self.fn.user_time_of(t1):.6g}; the "
                      "solution may be inaccurate", stacklevel=2)
        self.history.pop()
        return dy


class AdamsBashforth(AdamsBashforthMoulton):
    """The explicit Adams-Bashforth method (``explicit_adams``): one evaluation per step.

    At the default ``max_order=12`` it is unstable on most problems (in torchdiffeq too):
    pass ``max_order=5`` or less.
    """

    order = 4
    implicit = False
