"""``odeint``: solve an initial value problem, differentiable by backpropagation through the
solver's operations."""

from __future__ import annotations

import contextlib
from typing import Any, Callable

import pullback
from pullback import Tensor

from ._problem import Problem, prepare


def odeint(func: Callable[..., Any], y0: Any, t: Tensor, *, rtol: Any = 1e-7, atol: Any = 1e-9,
           method: str = "dopri5", options: dict[str, Any] | None = None,
           event_fn: Callable[..., Any] | None = None) -> Any:
    """Integrate ``dy/dt = func(t, y)`` from ``y(t[0]) = y0`` and return ``y`` at every ``t``.

    torchdiffeq's ``odeint``, with the same solvers, options and defaults. Gradients flow to
    ``y0``, ``t`` and whatever ``func`` uses by backpropagation through the solver (memory grows
    with the number of steps; :func:`odeint_adjoint` keeps it constant).

    Args:
        func: ``func(t, y)`` -> dy/dt, a Tensor of y's shape (a tuple for a tuple ``y0``); ``t``
            is a 0-d Tensor of y's dtype. Any callable, often a :class:`pullback.nn.Module`.
        y0: the initial state, a floating Tensor of any shape or a tuple of them.
        t: 1-D Tensor of times, strictly increasing or strictly decreasing (then time runs
            backwards); ``t[0]`` is the initial time.
        rtol: relative tolerance of the adaptive solvers (a float, or a Tensor per element).
        atol: absolute tolerance (likewise).
        method: a name in :data:`pullback.sutra.SOLVERS`.
        options: the solver's options, e.g. ``{"step_size": 0.1}`` for a fixed-grid solver,
            ``{"first_step": 1e-3, "max_num_steps": 1000}`` for an adaptive one.
        event_fn: ``event_fn(t, y)`` -> Tensor; when given, ``t`` is ``[t0, t0 +- 1]`` (only its
            direction counts) and the solve stops where any element of ``event_fn`` first
            changes sign.

    Returns:
        ``y`` with time on axis 0, shape ``(len(t), *y0.shape)`` (a tuple for a tuple ``y0``);
        with ``event_fn``, ``(event_t, y)`` where ``y`` holds the states at ``t0`` and at the
        event.

    Raises:
        ValueError: an unknown method or option, times that are not strictly monotone, bad
            tolerances.
        ShapeError: ``func`` returned a shape other than the state's.
        NonFiniteError: ``func`` returned NaN or Inf (the message names the time and step).
        MaxStepsError: an adaptive solver took more than ``max_num_steps`` steps.

    Example::

        >>> import pullback as pb
        >>> from pullback.sutra import odeint
        >>> t = pb.linspace(0.0, 1.0, 3, dtype=pb.float64)
        >>> y = odeint(lambda t, y: -y, pb.ones(2, dtype=pb.float64), t)
        >>> [round(v, 6) for v in y[:, 0].tolist()]
        [1.0, 0.606531, 0.367879]
    """
    problem = prepare("odeint", func, y0, t, rtol, atol, method, options, event_fn)
    return solve(problem)


def solve(problem: Problem) -> Any:
    """Solve a prepared problem, in graph mode only when a gradient can flow through it."""
    fn = problem.dynamics(graph=True)
    graph, f0 = _needs_graph(problem, fn)
    fn.graph = graph
    y0 = problem.y0 if graph else problem.y0.array
    solver = problem.solver(fn, y0)
    with contextlib.nullcontext() if graph else pullback.no_grad():
        if problem.event_fn is None:
            states = solver.integrate(problem.times(graph), problem.times_f, f0)
            return problem.output(fn.stack(states))
        t_event, y_event = solver.integrate_until_event(problem.times(graph)[0], problem.times_f[0],
                                                        problem.event(fn))
        return problem.event_time(t_event), problem.output(fn.stack([y0, y_event]))


def _needs_graph(problem: Problem, fn: Any) -> tuple[bool, Any]:
    """Whether the solve must record a graph, and ``func(t0, y0)`` when it was evaluated to
    find out (the solvers reuse it as their first evaluation).

    A graph is needed when grad mode is on and ``y0`` or ``t`` requires grad, or ``func``'s
    output does (it uses parameters that do). Otherwise the solver runs on raw arrays.
    """
    if not pullback.is_grad_enabled():
        return False, None
    user_y0 = problem.user_y0
    parts = user_y0 if isinstance(user_y0, tuple) else (user_y0,)
    if problem.t.requires_grad or any(p.requires_grad for p in parts):
        return True, None
    f0 = fn(problem.times_f[0], problem.y0)
    graph = f0.requires_grad
    if problem.event_fn is not None:
        return graph, None  # an event search starts from scratch
    return graph, f0 if graph else f0.array
