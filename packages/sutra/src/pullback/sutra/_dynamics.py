"""The user's ``func(t, y)`` as the solvers see it.

Solvers work in an *internal* form: time always increases (it is negated when the user's ``t``
decreases), a tuple state is one flat vector, and values are either raw backend arrays (*array
mode*: nothing needs a gradient through the solver, so its arithmetic skips Tensor dispatch) or
Tensors (*graph mode*: direct backpropagation through every solver operation). Solver code uses
Python operators only, so one implementation serves both modes; :class:`Dynamics` converts at
the boundary and checks what ``func`` returns.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

import pullback
from pullback import Tensor
from pullback.errors import DTypeError, ShapeError

from ._errors import NonFiniteError

# Perturbation of the time handed to func: the neighbouring float after or before it, so a
# func with a discontinuity at a grid point sees the side of the step it is evaluated for.
NONE, NEXT, PREV = 0, 1, -1


def as_array(value: Any) -> Any:
    """The backend array of a Tensor; arrays pass through (step control never needs a graph)."""
    return value.array if isinstance(value, Tensor) else value


def time_value(t: Any) -> float:
    """A time as a Python float (times are floats, or 0-d Tensors when ``t`` needs a gradient)."""
    return t if isinstance(t, float) else float(as_array(t))


class Dynamics:
    """``func`` in the solvers' internal form (see the module docstring).

    Args:
        func: the user's ``func(t, y)``.
        shape: the internal state's shape (the flat length for tuple states).
        dtype: the state's dtype; ``func`` receives ``t`` as a 0-d Tensor of this dtype.
        device: the state's device.
        shapes: the shapes of a tuple state's components, or ``None`` for a Tensor state.
        sign: ``1.0``, or ``-1.0`` when the user's time runs backwards (internal time is
            ``sign * t`` and internal rates are ``sign * func(t, y)``).
        graph: whether states are Tensors (graph mode) or arrays (array mode).
        name: the public function, for error messages (``"odeint"``, ``"odeint_adjoint"``).
    """

    def __init__(self, func: Callable[..., Any], shape: tuple[int, ...], dtype: Any, device: Any,
                 shapes: Sequence[tuple[int, ...]] | None, sign: float, graph: bool,
                 name: str) -> None:
        self.func, self.shape, self.dtype, self.device = func, shape, dtype, device
        self.shapes, self.sign, self.graph, self.name = shapes, sign, graph, name
        self.xp = device.backend.xp
        self.nfe = 0
        self._bounds: list[tuple[int, int]] = []
        offset = 0
        for s in shapes or ():
            size = math.prod(s)
            self._bounds.append((offset, offset + size))
            offset += size

    def __call__(self, t: Any, y: Any, perturb: int = NONE) -> Any:
        """``func``'s rate at internal time ``t`` and internal state ``y``, in internal form."""
        self.nfe += 1
        out = self.func(self.user_time(t, perturb), self.user_state(y, self.graph))
        return self._rate(out, self.graph)

    def array_call(self, t: float, y: Any, perturb: int = NONE) -> Any:
        """Like calling it, on arrays and without a graph whatever the mode (for step-size
        probes and event checks, which only need values)."""
        self.nfe += 1
        with pullback.no_grad():
            out = self.func(self.user_time(t, perturb), self.user_state(y, False))
            return self._rate(out, False)

    def user_time(self, t: Any, perturb: int = NONE) -> Tensor:
        """The 0-d Tensor ``func`` receives for internal time ``t`` (in the state's dtype, as
        torchdiffeq does; nudged to the next float before or after it when ``perturb``)."""
        direction = self.sign * perturb
        if isinstance(t, Tensor):
            user = t if self.sign > 0 else -t
            if user.dtype != self.dtype:
                user = user.to(self.dtype)
            if direction:
                value = np.asarray(float(user.array), dtype=self.dtype)
                user = user + float(np.nextafter(value, direction * np.inf) - value)
            return user
        value = np.asarray(self.sign * t, dtype=self.dtype)
        if direction:
            value = np.nextafter(value, direction * np.inf)
        return Tensor._wrap(self.device.backend.asarray(value, index=self.device.index or 0),
                            self.device)

    def user_state(self, y: Any, graph: bool) -> Any:
        """The state ``func`` receives: a Tensor, or the tuple of the user's components."""
        if self.shapes is None:
            return y if graph else Tensor._wrap(y, self.device)
        parts = [y[a:b].reshape(s) for (a, b), s in zip(self._bounds, self.shapes)]
        return tuple(parts) if graph else tuple(Tensor._wrap(p, self.device) for p in parts)

    def _rate(self, out: Any, graph: bool) -> Any:
        if self.shapes is None:
            rate = self._checked(out, self.shape, "")
        else:
            if not isinstance(out, (tuple, list)) or len(out) != len(self.shapes):
                got = f"a {type(out).__name__} of {len(out)}" if isinstance(out, (tuple, list)) \
                    else type(out).__name__
                raise TypeError(f"{self.name}: y0 is a tuple of {len(self.shapes)} Tensors, so "
                                f"func(t, y) must return a tuple of {len(self.shapes)}; got {got}")
            parts = [self._checked(o, s, f"[{i}]") for i, (o, s) in enumerate(zip(out, self.shapes))]
            if graph:
                rate = pullback.cat([p.reshape(-1) for p in parts])
            else:
                rate = self.xp.concatenate([p.array.reshape(-1) for p in parts])
        if not graph and isinstance(rate, Tensor):
            rate = rate.array
        return -rate if self.sign < 0 else rate

    def _checked(self, out: Any, shape: tuple[int, ...], which: str) -> Tensor:
        if not isinstance(out, Tensor):
            raise TypeError(f"{self.name}: func(t, y) must return a Tensor like y0{which} "
                            f"(shape {shape}), got {type(out).__name__}")
        if out.shape != shape:
            raise ShapeError(f"{self.name}: func(t, y) returned shape {out.shape} for y0{which} "
                             f"of shape {shape}; dy/dt must have the state's shape")
        if out.dtype != self.dtype:
            if out.dtype.kind != "f":
                raise DTypeError(f"{self.name}: func(t, y) returned {out.dtype} for the "
                                 f"{self.dtype} state y0{which}")
            out = out.to(self.dtype)
        return out

    def user_time_of(self, t: Any) -> float:
        """The user's time (a float) for internal time ``t``, for messages."""
        return self.sign * time_value(t)

    def stack(self, states: Sequence[Any]) -> Tensor:
        """The states at the output times as one Tensor (time on axis 0)."""
        if self.graph:
            return pullback.stack(list(states))
        return Tensor._wrap(self.xp.stack(states), self.device)


class CheckedDynamics:
    """Dynamics that raise :class:`NonFiniteError` at the first NaN or Inf ``func`` returns.

    Solvers check once per step (the error ratio, or the new state); when that check fails they
    replay the step through this wrapper to name the exact evaluation.
    """

    def __init__(self, dynamics: Dynamics, solver: str, step: int) -> None:
        self.dynamics, self.solver, self.step, self.stage = dynamics, solver, step, 0
        self.xp = dynamics.xp

    def __call__(self, t: Any, y: Any, perturb: int = NONE) -> Any:
        self.stage += 1
        rate = self.dynamics(t, y, perturb)
        values = as_array(rate)
        if not bool(self.xp.isfinite(values).all()):
            bad = "NaN" if bool(self.xp.isnan(values).any()) else "Inf"
            state_ok = bool(self.xp.isfinite(as_array(y)).all())
            raise NonFiniteError(
                f"{self.dynamics.name}: func returned {bad} at t={self.dynamics.user_time_of(t):.6g} "
                f"(step {self.step} of {self.solver}, evaluation {self.stage} of that step; the "
                f"state it was given was {'finite' if state_ok else 'already non-finite'})")
        return rate

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dynamics, name)


def all_finite(xp: Any, value: Any) -> bool:
    """Whether every element is finite: one sum on the hot path, confirmed element-wise only when
    the sum is not finite (a sum of huge finite values can overflow)."""
    array = as_array(value)
    return math.isfinite(float(array.sum())) or bool(xp.isfinite(array).all())
