"""odeint's arguments checked and turned into the solvers' internal form (see ``_dynamics``):
the state flattened when it is a tuple, time negated when it decreases, tolerances and options
as floats and arrays. Every bad argument is refused here with a message naming it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

import pullback
from pullback import Tensor
from pullback.errors import DeviceError, DTypeError, ShapeError

from ._dynamics import Dynamics, as_array
from ._norms import SegmentRMS, UserNorm
from ._solvers import SOLVERS, Solver, make_solver
from ._solvers._base import EventFn


def segment_bounds(shapes: Sequence[tuple[int, ...]], offset: int = 0) -> list[tuple[int, int]]:
    """``(start, stop)`` of each component of a flattened tuple state."""
    bounds = []
    for shape in shapes:
        size = math.prod(shape)
        bounds.append((offset, offset + size))
        offset += size
    return bounds


@dataclass
class Problem:
    """An initial value problem in internal form, ready for a solver."""

    name: str
    func: Callable[..., Any]
    user_y0: Any
    y0: Tensor  # the internal state: y0 itself, or a tuple's components as one flat vector
    shapes: list[tuple[int, ...]] | None
    t: Tensor
    sign: float  # -1.0 when t decreases (internal time is sign * t)
    times_f: list[float]
    rtol: Any
    atol: Any
    method: str
    options: dict[str, Any]
    event_fn: Callable[..., Any] | None
    bounds: list[tuple[int, int]] = field(default_factory=list)

    @property
    def device(self) -> Any:
        return self.y0.device

    def dynamics(self, graph: bool, func: Callable[..., Any] | None = None) -> Dynamics:
        """The dynamics in internal form (``func`` defaults to the problem's)."""
        return Dynamics(func or self.func, self.y0.shape, self.y0.dtype, self.device, self.shapes,
                        self.sign, graph, self.name)

    def times(self, graph: bool) -> list[Any]:
        """The internal output times: floats, or 0-d Tensors when ``t`` needs a gradient."""
        if graph and self.t.requires_grad:
            return list(pullback.unbind(self.t if self.sign > 0 else -self.t))
        return list(self.times_f)

    def solver(self, fn: Dynamics, y0: Any, method: str | None = None, rtol: Any = None,
               atol: Any = None, options: dict[str, Any] | None = None) -> Solver:
        """The solver for this problem (or, for the adjoint, another method and options)."""
        return make_solver(method or self.method, fn, y0, self.rtol if rtol is None else rtol,
                           self.atol if atol is None else atol,
                           self.options if options is None else options)

    def output(self, solution: Tensor) -> Any:
        """The solution as the user gave y0: one Tensor, or a tuple (time on axis 0)."""
        if self.shapes is None:
            return solution
        n = solution.shape[0]
        return tuple(solution[:, a:b].reshape((n, *shape))
                     for (a, b), shape in zip(self.bounds, self.shapes))

    def components(self, flat: Tensor) -> tuple[Tensor, ...]:
        """A flat internal state as the tuple of the user's components."""
        assert self.shapes is not None
        return tuple(flat[a:b].reshape(shape) for (a, b), shape in zip(self.bounds, self.shapes))

    def event_time(self, t_event: float) -> Tensor:
        return pullback.tensor(self.sign * t_event, dtype=self.t.dtype, device=self.t.device)

    def event(self, fn: Dynamics) -> EventFn:
        """The event function in internal form: its components combined into one, positive at
        the start, that crosses zero when the first of them does (torchdiffeq's rule)."""
        user = self.event_fn
        assert user is not None
        xp = fn.xp
        with pullback.no_grad():
            start = user(fn.user_time(self.times_f[0]), self.user_y0)
        signs = xp.sign(xp.asarray(as_array(start)))

        def combined(t: float, y: Any) -> float:
            with pullback.no_grad():
                value = user(fn.user_time(t), fn.user_state(y, False))
            return float((xp.asarray(as_array(value)) * signs).min())

        return combined


def prepare(name: str, func: Any, y0: Any, t: Any, rtol: Any, atol: Any, method: Any,
            options: Any, event_fn: Any) -> Problem:
    """Check odeint's arguments and put them in internal form."""
    if not callable(func):
        raise TypeError(f"{name}: func must be callable as func(t, y), got {type(func).__name__}")
    state, shapes = _state(name, y0)
    times_f, sign = _times(name, t)
    method = "dopri5" if method is None else method
    if not isinstance(method, str) or method not in SOLVERS:
        raise ValueError(f"{name}: unknown method {method!r}; the solvers are "
                         f"{', '.join(sorted(SOLVERS))}")
    if event_fn is not None:
        if not callable(event_fn):
            raise TypeError(f"{name}: event_fn must be callable as event_fn(t, y)")
        if len(times_f) != 2:
            raise ValueError(f"{name}: with an event_fn, t holds the start time and one more "
                             f"(its direction); got {len(times_f)} times")
    bounds = segment_bounds(shapes) if shapes is not None else []
    problem = Problem(name, func, y0, state, shapes, t, sign, times_f,
                      tolerance(name, "rtol", rtol, state, shapes),
                      tolerance(name, "atol", atol, state, shapes), method, {}, event_fn, bounds)
    problem.options = check_options(problem, method, options)
    return problem


def _state(name: str, y0: Any) -> tuple[Tensor, list[tuple[int, ...]] | None]:
    if isinstance(y0, Tensor):
        _floating(name, "y0", y0)
        return y0, None
    if not isinstance(y0, tuple) or not y0 or not all(isinstance(p, Tensor) for p in y0):
        raise TypeError(f"{name}: y0 must be a Tensor or a non-empty tuple of Tensors, got "
                        f"{type(y0).__name__}")
    for i, part in enumerate(y0):
        _floating(name, f"y0[{i}]", part)
        if part.device != y0[0].device:
            raise DeviceError(f"{name}: y0[{i}] is on {part.device} but y0[0] on {y0[0].device}")
    dtype = np.result_type(*[p.dtype for p in y0])
    flat = pullback.cat([p.reshape(-1).to(dtype) for p in y0])
    return flat, [tuple(p.shape) for p in y0]


def _floating(name: str, what: str, x: Tensor) -> None:
    if x.dtype.kind != "f":
        raise DTypeError(f"{name}: {what} must be a floating-point Tensor, got {x.dtype}")


def _times(name: str, t: Any) -> tuple[list[float], float]:
    if not isinstance(t, Tensor):
        raise TypeError(f"{name}: t must be a 1-D floating-point Tensor of times, got "
                        f"{type(t).__name__}")
    if t.ndim != 1 or t.shape[0] == 0:
        raise ShapeError(f"{name}: t must be a non-empty 1-D Tensor of times, got shape {t.shape}")
    _floating(name, "t", t)
    values = [float(v) for v in t.detach().tolist()]
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{name}: t holds a NaN or Inf: {values}")
    sign = -1.0 if len(values) > 1 and values[1] < values[0] else 1.0
    for i in range(1, len(values)):
        if not sign * values[i] > sign * values[i - 1]:
            raise ValueError(
                f"{name}: t must be strictly increasing or strictly decreasing; t[{i}]="
                f"{values[i]} {'does not follow' if sign > 0 else 'does not precede'} "
                f"t[{i - 1}]={values[i - 1]}")
    return [sign * v for v in values], sign


def tolerance(name: str, label: str, tol: Any, state: Tensor,
              shapes: list[tuple[int, ...]] | None) -> Any:
    """rtol or atol: a float, or an array of the internal state's shape (per-element)."""
    if isinstance(tol, tuple):
        if shapes is None or len(tol) != len(shapes):
            raise ValueError(f"{name}: a tuple {label} needs a tuple y0 of the same length "
                             f"({len(tol)} tolerances for {'a Tensor' if shapes is None else len(shapes)})")
        if all(_is_number(x) for x in tol):
            parts = [np.full(math.prod(s), _nonnegative(name, label, x)) for x, s in zip(tol, shapes)]
        else:
            parts = [_component_tolerance(name, label, i, x, s) for i, (x, s) in enumerate(zip(tol, shapes))]
        return state.device.backend.asarray(np.concatenate(parts).astype(state.dtype))
    if _is_number(tol):
        return _nonnegative(name, label, tol)
    if not isinstance(tol, Tensor) or shapes is not None:
        raise TypeError(f"{name}: {label} must be a number, a Tensor (of the state's shape or "
                        f"broadcastable to it), or for a tuple y0 a tuple of those; got "
                        f"{type(tol).__name__}")
    shape = tuple(state.shape)
    array = _tolerance_array(name, label, tol)
    try:
        array = np.broadcast_to(array, shape)
    except ValueError:
        raise ShapeError(f"{name}: {label} of shape {tol.shape} does not broadcast to the state's "
                         f"shape {shape}") from None
    return state.device.backend.asarray(np.ascontiguousarray(array, dtype=state.dtype))


def _component_tolerance(name: str, label: str, i: int, tol: Any, shape: tuple[int, ...]) -> np.ndarray:
    """One component's tolerance, flat: broadcast to its shape, or already flat (torchdiffeq's
    rule: a component's tolerance is expanded to its number of elements)."""
    array = _tolerance_array(name, label, tol)
    try:
        return np.broadcast_to(array, shape).reshape(-1)
    except ValueError:
        if array.size == math.prod(shape):
            return array.reshape(-1)
        raise ShapeError(f"{name}: {label}[{i}] of shape {array.shape} does not fit y0[{i}] of "
                         f"shape {shape}") from None


def _tolerance_array(name: str, label: str, tol: Any) -> np.ndarray:
    if isinstance(tol, Tensor):
        if tol.requires_grad:
            raise ValueError(f"{name}: {label} cannot require grad")
        array = np.asarray(tol.device.backend.to_host(tol.array), dtype=np.float64)
    else:
        array = np.asarray(tol, dtype=np.float64)
    if not (np.isfinite(array).all() and (array >= 0).all()):
        raise ValueError(f"{name}: {label} must be finite and non-negative")
    return array


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool)


def _nonnegative(name: str, label: str, x: Any) -> float:
    value = float(x)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name}: {label} must be a finite non-negative number, got {x}")
    return value


def check_options(problem: Problem, method: str, options: Any, label: str = "options") -> dict[str, Any]:
    """``options`` for ``method``: unknown names refused, values in internal form."""
    if options is None:
        options = {}
    if not isinstance(options, Mapping):
        raise TypeError(f"{problem.name}: {label} must be a dict, got {type(options).__name__}")
    valid = SOLVERS[method].option_names()
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"{problem.name}: method {method!r} takes no option {unknown[0]!r} "
                         f"(in {label}); its options are: {', '.join(valid)}")
    checked = dict(options)
    if "norm" in valid:
        checked["norm"] = _norm(problem, checked.get("norm"))
    for key in ("step_t", "jump_t"):
        if checked.get(key) is not None:
            checked[key] = _special_times(problem, key, checked[key])
    if checked.get("grid_constructor") is not None:
        checked["grid_constructor"] = _grid_constructor(problem, checked["grid_constructor"])
    return checked


def _norm(problem: Problem, norm: Any) -> Callable[[Any], float] | None:
    if norm is None:
        # Default: RMS, and for a tuple the largest RMS of its components (torchdiffeq's).
        return SegmentRMS(problem.bounds, problem.device.backend.xp) if problem.shapes else None
    if not callable(norm):
        raise TypeError(f"{problem.name}: options['norm'] must be callable as norm(y) -> scalar, "
                        f"got {norm!r}")
    return UserNorm(norm, problem.device, problem.components if problem.shapes else None)


def _special_times(problem: Problem, key: str, values: Any) -> list[float]:
    raw = values.detach().tolist() if isinstance(values, Tensor) else list(values)
    internal = sorted(problem.sign * float(v) for v in np.ravel(raw))
    return [v for v in internal if v >= problem.times_f[0]]


def _grid_constructor(problem: Problem, construct: Any) -> Callable[[list[float]], list[float]]:
    if not callable(construct):
        raise TypeError(f"{problem.name}: grid_constructor must be callable as "
                        "grid_constructor(func, y0, t) -> Tensor")

    def internal(_: list[float]) -> list[float]:
        grid = construct(problem.func, problem.user_y0, problem.t.detach())
        values = grid.detach().tolist() if isinstance(grid, Tensor) else list(grid)
        return [problem.sign * float(v) for v in values]

    return internal
