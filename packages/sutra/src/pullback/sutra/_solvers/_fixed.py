"""Fixed-grid solvers: steps on the output times, or on a grid of ``step_size``, with linear or
cubic Hermite interpolation at the output times in between (torchdiffeq's rules)."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

from .._dynamics import NEXT, NONE, PREV, Dynamics, all_finite, as_array
from .._errors import MaxStepsError
from ._base import EventFn, Solver, sign
from ._runge_kutta import ButcherTableau, combine, stages

# An event search takes at most this many steps (torchdiffeq's bound).
MAX_EVENT_STEPS = 20000


class UniformGrid(Sequence[float]):
    """``start + k * step`` for ``k < count``, the last point ``end``: computed when read, so a
    solve of N steps keeps no list of N times (the adjoint's memory must not grow with N)."""

    def __init__(self, start: float, step: float, count: int, end: float) -> None:
        self.start, self.step, self.count, self.end = start, step, count, end

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, k):  # type: ignore[override]
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self.count))]
        if k < 0:
            k += self.count
        if not 0 <= k < self.count:
            raise IndexError(k)
        return self.end if k == self.count - 1 else self.start + k * self.step


class FixedGridSolver(Solver):
    """Base of the fixed-grid solvers: subclasses implement :meth:`step`.

    Options:
        step_size: the step; without it the solver steps from output time to output time.
        grid_constructor: ``grid_constructor(func, y0, t)`` returns the grid (a 1-D Tensor from
            ``t[0]`` to ``t[-1]``), instead of ``step_size``.
        perturb: evaluate ``func`` just after the start and just before the end of each step
            (for dynamics with discontinuities at grid points).
        interp: ``"linear"`` (torchdiffeq's default) or ``"cubic"`` (Hermite, one more
            evaluation per output time) between grid points.
    """

    def __init__(self, fn: Dynamics, y0: Any, *, rtol: Any, atol: Any,
                 step_size: float | None = None,
                 grid_constructor: Callable[[list[float]], list[float]] | None = None,
                 perturb: bool = False, interp: str = "linear") -> None:
        super().__init__(fn, y0, rtol=rtol, atol=atol)
        if step_size is not None and grid_constructor is not None:
            raise ValueError(f"{fn.name}: step_size and grid_constructor exclude each other")
        if step_size is not None and not (float(step_size) > 0 and math.isfinite(float(step_size))):
            raise ValueError(f"{fn.name}: step_size must be a positive number, got {step_size}")
        if interp not in ("linear", "cubic"):
            raise ValueError(f"{fn.name}: interp must be 'linear' or 'cubic', got {interp!r}")
        self.step_size = None if step_size is None else float(step_size)
        # odeint hands over the user's grid_constructor already in internal time (floats).
        self.grid_constructor = grid_constructor
        self.perturb, self.interp = bool(perturb), interp
        self.start_perturb = NEXT if self.perturb else NONE
        self.end_perturb = PREV if self.perturb else NONE

    def step(self, t0: Any, dt: Any, t1: Any, y0: Any, f0: Any) -> tuple[Any, Any]:
        """One step: ``(y1 - y0, fn(t0, y0))``; ``f0`` is that rate when already known."""
        raise NotImplementedError

    def integrate(self, times: Sequence[Any], times_f: Sequence[float], f0: Any = None) -> list[Any]:
        out = [self.y0]
        if len(times) == 1:
            return out
        grid, grid_f = self._grid(times, times_f)
        j, y0 = 1, self.y0
        f0 = None if self.perturb else f0  # a perturbed first evaluation is not f0
        for n in range(1, len(grid)):
            t0, t1, t0f, t1f = grid[n - 1], grid[n], grid_f[n - 1], grid_f[n]
            dt = t1 - t0
            dy, k0 = self.step(t0, dt, t1, y0, f0)
            y1 = y0 + dy
            self._check(n, t0, dt, t1, y0, y1)
            while j < len(times) and t1f >= times_f[j]:
                out.append(self._interpolate(t0, t1, t0f, t1f, y0, y1, k0, times[j], times_f[j]))
                j += 1
            y0, f0 = y1, None
        return out

    def integrate_until_event(self, t0: Any, t0f: float, event_fn: EventFn) -> tuple[float, Any]:
        if self.step_size is None:
            raise ValueError(f"{self.fn.name}: an event with the fixed-grid solver {self.name} "
                             "needs options['step_size']")
        dt, y0 = self.step_size, self.y0
        sign0 = sign(event_fn(t0f, as_array(y0)))
        for n in range(1, MAX_EVENT_STEPS + 1):
            t1, t1f = t0 + dt, t0f + dt
            dy, k0 = self.step(t0, dt, t1, y0, None)
            y1 = y0 + dy
            self._check(n, t0, dt, t1, y0, y1)
            if sign(event_fn(t1f, as_array(y1))) != sign0:
                return self.find_event(self._interpolator(t0, t1, t0f, t1f, y0, y1, k0), sign0,
                                       t0f, t1f, event_fn)
            t0, t0f, y0 = t1, t1f, y1
        raise MaxStepsError(f"{self.fn.name}: no event within {MAX_EVENT_STEPS} steps of "
                            f"{self.step_size} ({self.name}); the last state was at "
                            f"t={self.fn.user_time_of(t0f):.6g}")

    def _interpolator(self, t0: Any, t1: Any, t0f: float, t1f: float, y0: Any, y1: Any,
                      f0: Any) -> Callable[[float], Any]:
        """The interpolation inside one step, as a function of time (for the event search)."""
        return lambda t: self._interpolate(t0, t1, t0f, t1f, y0, y1, f0, t, t)

    def _check(self, n: int, t0: Any, dt: Any, t1: Any, y0: Any, y1: Any) -> None:
        """Raise if step ``n`` (from ``t0``) made a non-finite state."""
        if not all_finite(self.xp, y1):
            self.raise_non_finite(n, t0, lambda: self.step(t0, dt, t1, y0, None))

    def _grid(self, times: Sequence[Any],
              times_f: Sequence[float]) -> tuple[Sequence[Any], Sequence[float]]:
        """The grid as values (Tensors where ``t`` has a gradient) and as floats."""
        start, end = times_f[0], times_f[-1]
        if self.grid_constructor is not None:
            grid_f = [float(g) for g in self.grid_constructor(list(times_f))]
            if grid_f[0] != start or grid_f[-1] != end:
                raise ValueError(f"{self.fn.name}: grid_constructor must return a grid from t[0] "
                                 f"to t[-1]; got {grid_f[0]} .. {grid_f[-1]}")
            grid: list[Any] = [times[0], *grid_f[1:-1], times[-1]]
            return grid, grid_f
        if self.step_size is None:
            return list(times), list(times_f)
        h = self.step_size
        count = math.ceil((end - start) / h + 1)
        uniform = UniformGrid(start, h, count, end)
        if isinstance(times[0], float):
            return uniform, uniform
        grid_f = list(uniform)
        # t has a gradient: every grid point moves with t[0], the last one is t[-1].
        grid = [times[0]] + [times[0] + k * h for k in range(1, count - 1)] + [times[-1]]
        return grid, grid_f

    def _interpolate(self, t0: Any, t1: Any, t0f: float, t1f: float, y0: Any, y1: Any, f0: Any,
                     t: Any, tf: float) -> Any:
        if isinstance(t, float):  # with t's gradient, even a grid point goes through the formula
            if tf == t0f:
                return y0
            if tf == t1f:
                return y1
        if self.interp == "linear":
            return y0 + (y1 - y0) * ((t - t0) / (t1 - t0))
        f1 = self.fn(t1, y1)
        dt = t1 - t0
        h = (t - t0) / dt
        h00 = (1 + 2 * h) * (1 - h) * (1 - h)
        h10 = h * (1 - h) * (1 - h)
        h01 = h * h * (3 - 2 * h)
        h11 = h * h * (h - 1)
        return y0 * h00 + f0 * (h10 * dt) + y1 * h01 + f1 * (h11 * dt)


class FixedRungeKutta(FixedGridSolver):
    """A fixed-grid explicit Runge-Kutta method: subclasses set ``tableau`` and ``order``."""

    tableau: ButcherTableau

    def step(self, t0: Any, dt: Any, t1: Any, y0: Any, f0: Any) -> tuple[Any, Any]:
        if f0 is None:
            f0 = self.fn(t0, y0, self.start_perturb)
        ks, _ = stages(self.fn, self.tableau, t0, t1, dt, y0, f0, self.end_perturb)
        return combine(self.tableau.b_pairs, ks, dt), f0
