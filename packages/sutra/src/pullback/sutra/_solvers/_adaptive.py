"""Adaptive-step explicit Runge-Kutta solvers (torchdiffeq's error norm and step rules).

Step control runs on Python floats and raw arrays whatever the mode, so a step costs the
stages' array operations and a handful of float operations: the error estimate and the next
step size never need a gradient (torchdiffeq computes the step size under no_grad too).
"""

from __future__ import annotations

import bisect
import math
from typing import Any, Callable, Sequence

from .._dynamics import NEXT, PREV, Dynamics, as_array
from .._errors import MaxStepsError, SolverError
from .._norms import error_ratio, rms_norm
from ._base import EventFn, Solver, sign
from ._runge_kutta import ButcherTableau, combine, stages


class AdaptiveRungeKutta(Solver):
    """Base of the adaptive solvers: subclasses set ``tableau`` (with ``b_error`` and ``dense``)
    and ``order``.

    Options:
        norm: the error norm, ``norm(error)`` -> scalar (default: RMS; for tuple states the
            largest RMS of the components).
        first_step: the first step size (default: chosen from the problem, Hairer's rule).
        safety, ifactor, dfactor: the next step is ``dt * clamp(safety / ratio**(1/order),
            dfactor, ifactor)`` (no shrinking bound after an accepted step).
        max_num_steps: the most steps (accepted and rejected) of one solve; more raise
            :class:`MaxStepsError`. (torchdiffeq counts per output interval.)
        min_step, max_step: bounds of the step size; a step at ``min_step`` is always accepted.
        step_t: times the solver must step to exactly (e.g. where the dynamics change).
        jump_t: like ``step_t``, where ``func`` is discontinuous: after stepping there the rate
            is evaluated again just after the jump.
    """

    tableau: ButcherTableau

    def __init__(self, fn: Dynamics, y0: Any, *, rtol: Any, atol: Any,
                 norm: Callable[[Any], float] | None = None, first_step: float | None = None,
                 safety: float = 0.9, ifactor: float = 10.0, dfactor: float = 0.2,
                 max_num_steps: int = 2 ** 31 - 1, min_step: float = 0.0,
                 max_step: float = math.inf, step_t: Sequence[float] | None = None,
                 jump_t: Sequence[float] | None = None) -> None:
        super().__init__(fn, y0, rtol=rtol, atol=atol)
        self.norm = norm if norm is not None else rms_norm
        self.first_step = None if first_step is None else float(first_step)
        self.safety, self.ifactor, self.dfactor = float(safety), float(ifactor), float(dfactor)
        self.max_num_steps = int(max_num_steps)
        self.min_step, self.max_step = float(min_step), float(max_step)
        if self.first_step is not None and not self.first_step > 0:
            raise ValueError(f"{fn.name}: first_step must be positive, got {first_step}")
        if not 0 <= self.min_step <= self.max_step:
            raise ValueError(f"{fn.name}: need 0 <= min_step <= max_step, got {min_step}, {max_step}")
        # odeint hands over step_t and jump_t as sorted floats in internal time.
        self.step_t, self.jump_t = list(step_t or ()), list(jump_t or ())
        if set(self.step_t) & set(self.jump_t):
            raise ValueError(f"{fn.name}: step_t and jump_t must not share a time")

    # -- the solve ---------------------------------------------------------------------------
    def integrate(self, times: Sequence[Any], times_f: Sequence[float], f0: Any = None) -> list[Any]:
        self._start(times[0], times_f[0], f0)
        out = [self.y0]
        for t, tf in zip(times[1:], times_f[1:]):
            while tf > self.t1f:
                self._step()
            out.append(self._dense(t))
        return out

    def integrate_until_event(self, t0: Any, t0f: float, event_fn: EventFn) -> tuple[float, Any]:
        self._start(t0, t0f, None)
        value = event_fn(self.t1f, as_array(self.y1))
        if value == 0:
            return self.t1f, self.y1
        sign0 = sign(value)
        while sign(event_fn(self.t1f, as_array(self.y1))) == sign0:
            self._step()
        return self.find_event(self._dense, sign0, self.t0f, self.t1f, event_fn)

    # -- steps -------------------------------------------------------------------------------
    def _start(self, t0: Any, t0f: float, f0: Any) -> None:
        """The state before the first step; ``(t0, t1)`` is the last accepted step."""
        if f0 is None:
            f0 = self.fn(t0, self.y0)
        self.t0 = self.t1 = t0
        self.t0f = self.t1f = t0f
        self.y_start = self.y1 = self.y0
        self.f1, self.ks, self.dt = f0, [f0], 0.0
        self.steps = 0
        self.dt_next = self.first_step if self.first_step is not None else self._initial_step(t0f, f0)
        self.step_index = min(bisect.bisect(self.step_t, t0f), len(self.step_t) - 1)
        self.jump_index = min(bisect.bisect(self.jump_t, t0f), len(self.jump_t) - 1)

    def _initial_step(self, t0: float, f0: Any) -> float:
        """Hairer, Norsett & Wanner, Solving ODEs I, II.4 (one extra evaluation), as torchdiffeq."""
        y0, f0 = as_array(self.y0), as_array(f0)
        if not (bool(self.xp.isfinite(y0).all()) and bool(self.xp.isfinite(f0).all())):
            self.raise_non_finite(0, t0, lambda: self.fn(t0, self.y0))
        scale = self.atol + abs(y0) * self.rtol
        d0, d1 = abs(self.norm(y0 / scale)), abs(self.norm(f0 / scale))
        h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        f1 = self.fn.array_call(t0 + h0, y0 + f0 * h0)
        d2 = abs(self.norm((f1 - f0) / scale) / h0)
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = max(1e-6, h0 * 1e-3)
        else:
            h1 = (0.01 / max(d1, d2)) ** (1.0 / self.order)  # torchdiffeq: 1 / ((order-1) + 1)
        return min(100 * h0, h1)

    def _step(self) -> None:
        """Try one step from the end of the last accepted one; accept it or not, and choose
        the next step size."""
        self.steps += 1
        if self.steps > self.max_num_steps:
            raise MaxStepsError(
                f"{self.fn.name}: {self.name} took max_num_steps={self.max_num_steps} steps and "
                f"reached t={self.fn.user_time_of(self.t1f):.6g} (step size {self.dt_next:.3g}); "
                "raise options['max_num_steps'] or loosen rtol/atol (a stiff problem?)")
        dt = self.dt_next if math.isfinite(self.dt_next) else self.min_step
        dt = min(max(dt, self.min_step), self.max_step)
        t0, t0f, y0, f0 = self.t1, self.t1f, self.y1, self.f1
        t1f = t0f + dt
        if not t1f > t0f:
            raise SolverError(f"{self.fn.name}: the step size of {self.name} underflowed "
                              f"({dt:.3g}) at t={self.fn.user_time_of(t0f):.6g}")
        on_step = on_jump = False
        if self.step_t and t0f < self.step_t[self.step_index] < t1f:
            on_step, t1f = True, self.step_t[self.step_index]
        if self.jump_t and t0f < self.jump_t[self.jump_index] < t1f:
            on_step, on_jump, t1f = False, True, self.jump_t[self.jump_index]
        if on_step or on_jump:
            dt = t1f - t0f
        t1 = t1f if isinstance(t0, float) else t0 + dt
        ks, y1 = stages(self.fn, self.tableau, t0, t1, dt, y0, f0, PREV)
        if not self.tableau.fsal:
            y1 = y0 + combine(self.tableau.b_pairs, ks, dt)
        arrays = [as_array(k) for k in ks]
        error = combine(self.tableau.error_pairs, arrays, dt)
        ratio = error_ratio(self.norm, self.xp, error, as_array(y0), as_array(y1), self.rtol, self.atol)
        if not math.isfinite(ratio):
            self.raise_non_finite(self.steps, t0, lambda: stages(self.fn, self.tableau, t0, t1, dt,
                                                                  y0, f0, PREV))
        accept = (ratio <= 1 and dt <= self.max_step) or dt <= self.min_step
        if accept:
            self.t0, self.t0f, self.y_start, self.ks, self.dt = t0, t0f, y0, ks, dt
            self.t1, self.t1f, self.y1, self.f1 = t1, t1f, y1, ks[-1]
            if on_step and self.step_index < len(self.step_t) - 1:
                self.step_index += 1
            if on_jump:
                if self.jump_index < len(self.jump_t) - 1:
                    self.jump_index += 1
                self.f1 = self.fn(t1, y1, NEXT)  # the rate on the far side of the jump
        self.dt_next = min(max(self._next_step(dt, ratio), self.min_step), self.max_step)

    def _next_step(self, dt: float, ratio: float) -> float:
        if ratio == 0:
            return dt * self.ifactor
        dfactor = 1.0 if ratio < 1 else self.dfactor
        return dt * min(self.ifactor, max(self.safety / ratio ** (1.0 / self.order), dfactor))

    def _dense(self, t: Any) -> Any:
        """The state at ``t`` inside the last accepted step, from the tableau's dense output."""
        theta = (t - self.t0) / (self.t1 - self.t0)
        return self.y_start + combine(self.tableau.dense_weights(theta), self.ks, self.dt)

