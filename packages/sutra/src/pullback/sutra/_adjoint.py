"""``odeint_adjoint``: gradients by the continuous adjoint method (Chen et al. 2018, torchdiffeq).

The forward solve keeps only the states at the output times. The backward pass solves, from
each output time back to the one before, the augmented system

    d/dt [t_bar, y, a, theta_bar] = [-a . df/dt, f, -a . df/dy, -a . df/dtheta]

where ``a = dL/dy``: one vector-Jacobian product of ``func`` per evaluation, and memory that does
not grow with the number of steps. Everything in it runs on raw arrays except ``func`` and its
vector-Jacobian product.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

import pullback
from pullback import Tensor
from pullback.autograd import Function, FunctionCtx
from pullback.nn import Module

from ._norms import SegmentRMS, UserNorm, rms_norm
from ._problem import Problem, prepare, segment_bounds
from ._solvers import SOLVERS, make_solver


def odeint_adjoint(func: Callable[..., Any], y0: Any, t: Tensor, *, rtol: Any = 1e-7,
                   atol: Any = 1e-9, method: str = "dopri5", options: dict[str, Any] | None = None,
                   event_fn: Callable[..., Any] | None = None, adjoint_rtol: float | None = None,
                   adjoint_atol: float | None = None, adjoint_method: str | None = None,
                   adjoint_options: dict[str, Any] | None = None,
                   adjoint_params: Sequence[Tensor] | None = None) -> Any:
    """:func:`odeint` whose backward pass solves the adjoint system backwards in time.

    The result and the arguments are :func:`odeint`'s; memory for the backward pass does not
    grow with the number of solver steps. Gradients reach ``y0``, ``t`` and ``adjoint_params``.

    Args:
        func, y0, t, rtol, atol, method, options, event_fn: as for :func:`odeint`.
        adjoint_rtol, adjoint_atol: tolerances of the backward solve (default: rtol, atol).
        adjoint_method: its solver (default: ``method``).
        adjoint_options: its options (default: ``options`` without ``norm``; required when
            ``adjoint_method`` differs and ``options`` is given). ``{"norm": "seminorm"}``
            leaves the parameters' adjoint out of the error norm (Kidger et al. 2021: fewer
            steps, the same gradients to tolerance).
        adjoint_params: the tensors to differentiate besides ``y0`` and ``t`` (default:
            ``func.parameters()``, so ``func`` must then be a :class:`pullback.nn.Module`).

    Example::

        >>> import pullback as pb
        >>> from pullback import nn
        >>> from pullback.sutra import odeint_adjoint
        >>> func = nn.Linear(2, 2)
        >>> y = odeint_adjoint(lambda t, y: func(y), pb.ones(1, 2), pb.tensor([0.0, 1.0]),
        ...                    adjoint_params=tuple(func.parameters()))
        >>> y[-1].sum().backward()
        >>> func.weight.grad.shape
        (2, 2)
    """
    params = _adjoint_params(func, adjoint_params)
    problem = prepare("odeint_adjoint", func, y0, t, rtol, atol, method, options, event_fn)
    backward = _backward_settings(problem, rtol, atol, options, adjoint_rtol, adjoint_atol,
                                  adjoint_method, adjoint_options, len(params))
    result = _AdjointSolve.apply(problem, backward, problem.y0, t, *params)
    if event_fn is None:
        return problem.output(result)
    event_t, solution = result
    return event_t, problem.output(solution)


def _adjoint_params(func: Any, given: Sequence[Tensor] | None) -> tuple[Tensor, ...]:
    if given is None:
        if not isinstance(func, Module):
            raise ValueError("odeint_adjoint: func is not a pullback.nn.Module, so its parameters "
                             "cannot be found; pass adjoint_params=(...) (() when there are none)")
        given = list(func.parameters())
    unique: dict[int, Tensor] = {}
    for p in given:
        if not isinstance(p, Tensor):
            raise TypeError(f"odeint_adjoint: adjoint_params must be Tensors, got {type(p).__name__}")
        if p.requires_grad:
            unique.setdefault(id(p), p)
    return tuple(unique.values())


@dataclass
class _Backward:
    """How the backward pass solves the augmented system."""

    method: str
    rtol: float
    atol: float
    options: dict[str, Any]
    seminorm: bool
    user_norm: Callable[..., Any] | None


def _backward_settings(problem: Problem, rtol: Any, atol: Any, options: Any,
                       adjoint_rtol: Any, adjoint_atol: Any, adjoint_method: Any,
                       adjoint_options: Any, n_params: int) -> _Backward:
    name = problem.name
    method = problem.method if adjoint_method is None else adjoint_method
    if not isinstance(method, str) or method not in SOLVERS:
        raise ValueError(f"{name}: unknown adjoint_method {method!r}; the solvers are "
                         f"{', '.join(sorted(SOLVERS))}")
    if adjoint_options is None:
        if method != problem.method and options:
            raise ValueError(f"{name}: adjoint_method {method!r} differs from method "
                             f"{problem.method!r}, so adjoint_options cannot be taken from "
                             "options: pass adjoint_options too")
        adjoint_options = {k: v for k, v in (options or {}).items() if k != "norm"}
    adjoint_options = dict(adjoint_options)
    valid = SOLVERS[method].option_names()
    unknown = sorted(set(adjoint_options) - set(valid))
    if unknown or "grid_constructor" in adjoint_options:
        bad = unknown[0] if unknown else "grid_constructor"
        raise ValueError(f"{name}: adjoint_method {method!r} takes no option {bad!r} (in "
                         f"adjoint_options); its options are: "
                         f"{', '.join(v for v in valid if v != 'grid_constructor')}")
    norm = adjoint_options.pop("norm", None)
    if norm is not None and norm != "seminorm" and not callable(norm):
        raise TypeError(f"{name}: adjoint_options['norm'] must be 'seminorm' or callable, got {norm!r}")
    for key in ("step_t", "jump_t"):  # the backward solve runs in u = -(internal time)
        if adjoint_options.get(key) is not None:
            values = adjoint_options[key]
            raw = values.detach().tolist() if isinstance(values, Tensor) else list(values)
            adjoint_options[key] = sorted(-problem.sign * float(v) for v in np.ravel(raw))
    return _Backward(method, _scalar(name, "adjoint_rtol", rtol if adjoint_rtol is None else adjoint_rtol),
                     _scalar(name, "adjoint_atol", atol if adjoint_atol is None else adjoint_atol),
                     adjoint_options, norm == "seminorm", norm if callable(norm) else None)


def _scalar(name: str, label: str, tol: Any) -> float:
    """A tolerance of the backward pass: one number (the largest of a per-element one)."""
    parts = tol if isinstance(tol, tuple) else (tol,)
    value = max(float(np.max(p.detach().numpy() if isinstance(p, Tensor) else np.asarray(p, float)))
                for p in parts)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{name}: {label} must be a finite non-negative number, got {tol}")
    return value


class _AdjointSolve(Function):
    """The solve as one graph node whose backward is the adjoint solve."""

    @staticmethod
    def forward(ctx: FunctionCtx, problem: Problem, backward: _Backward, y0: Tensor, t: Tensor,
                *params: Tensor) -> Any:
        fn = problem.dynamics(graph=False)
        solver = problem.solver(fn, y0.array)
        ctx.problem, ctx.backward, ctx.params = problem, backward, params
        if problem.event_fn is None:
            ctx.times = problem.times_f
            ctx.ys = fn.xp.stack(solver.integrate(problem.times_f, problem.times_f))
            return Tensor._wrap(ctx.ys, y0.device)
        t0 = problem.times_f[0]
        t_event, y_event = solver.integrate_until_event(t0, t0, problem.event(fn))
        ctx.times = [problem.times_f[0], t_event]
        ctx.ys = fn.xp.stack([y0.array, y_event])
        event_t = problem.event_time(t_event)
        ctx.mark_non_differentiable(event_t)  # odeint_event reroutes the event time's gradient
        return event_t, Tensor._wrap(ctx.ys, y0.device)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Tensor) -> Any:
        problem, settings, params = ctx.problem, ctx.backward, ctx.params
        ys, times, xp = ctx.ys, ctx.times, problem.device.backend.xp
        g = grads[-1].array.reshape(len(times), -1)
        need_t = ctx.needs_input_grad[3]
        with pullback.no_grad():
            augmented = _Augmented(problem, params, need_t)
            forward = problem.dynamics(graph=False)
            n = augmented.n
            z = xp.concatenate([xp.zeros(1, dtype=ys.dtype), ys[-1].reshape(-1), g[-1],
                                xp.zeros(augmented.size - 1 - 2 * n, dtype=ys.dtype)])
            time_grads = np.zeros(len(times))
            for i in range(len(times) - 1, 0, -1):
                if need_t:  # moving output time i moves y(t_i) by f(t_i, y_i)
                    rate = forward(times[i], ys[i]).reshape(-1)
                    time_grads[i] = float(rate @ g[i])
                    z[0] -= time_grads[i]
                solver = make_solver(settings.method, augmented, z, settings.rtol, settings.atol,
                                     augmented.options(settings))
                z = xp.array(solver.integrate([-times[i], -times[i - 1]],
                                              [-times[i], -times[i - 1]])[-1])
                z[1:1 + n] = ys[i - 1].reshape(-1)  # the forward state, not the backward estimate
                z[1 + n:1 + 2 * n] += g[i - 1]
            time_grads[0] = float(z[0])
        y0_grad = Tensor._wrap(z[1 + n:1 + 2 * n].reshape(problem.y0.shape), problem.device)
        t_grad = None
        if need_t:
            if problem.event_fn is not None:  # the event time's own gradient is odeint_event's
                time_grads = np.array([time_grads[0], 0.0])
            t_grad = pullback.tensor(problem.sign * time_grads, dtype=problem.t.dtype,
                                     device=problem.t.device)
        param_grads = [Tensor._wrap(z[a:b].reshape(p.shape).astype(p.dtype, copy=False), p.device)
                       for (a, b), p in zip(augmented.param_bounds, params)]
        return (None, None, y0_grad, t_grad, *param_grads)


class _Augmented:
    """The augmented system ``[t_bar, y, a, theta_bar]`` (flat) in backward time u = -t."""

    def __init__(self, problem: Problem, params: tuple[Tensor, ...], need_t: bool) -> None:
        self.problem, self.params, self.need_t = problem, params, need_t
        self.forward = problem.dynamics(graph=True)
        self.name, self.xp, self.sign = problem.name, self.forward.xp, 1.0
        self.shape, self.dtype, self.device = problem.y0.shape, problem.y0.dtype, problem.device
        self.n = math.prod(self.shape)
        self.param_bounds = segment_bounds([tuple(p.shape) for p in params], 1 + 2 * self.n)
        self.size = self.param_bounds[-1][1] if params else 1 + 2 * self.n
        self.nfe = 0

    def __call__(self, u: float, z: Any, perturb: int = 0) -> Any:
        self.nfe += 1
        n, shape = self.n, self.shape
        y = Tensor._wrap(z[1:1 + n].reshape(shape), self.device)
        y.requires_grad = True
        inputs = [y, *self.params]
        s: Any = -u
        if self.need_t:
            s = Tensor._wrap(self.xp.asarray(-u, dtype=self.dtype), self.device)
            s.requires_grad = True
            inputs.append(s)
        out = self.xp.empty_like(z)
        with pullback.enable_grad():
            rate = self.forward(s, y, -perturb)  # a nudge forward in u is one backward in t
            out[1:1 + n] = -rate.array.reshape(-1)
            vjps = [None] * len(inputs)
            if rate.requires_grad:
                vjps = list(pullback.autograd.grad(
                    rate, inputs, grad_outputs=Tensor._wrap(z[1 + n:1 + 2 * n].reshape(shape),
                                                            self.device), allow_unused=True))
        out[1 + n:1 + 2 * n] = 0.0 if vjps[0] is None else vjps[0].array.reshape(-1)
        for (a, b), vjp in zip(self.param_bounds, vjps[1:1 + len(self.params)]):
            out[a:b] = 0.0 if vjp is None else vjp.array.reshape(-1)
        out[0] = 0.0 if not self.need_t or vjps[-1] is None else float(vjps[-1].array)
        return out

    def array_call(self, u: float, z: Any, perturb: int = 0) -> Any:
        return self(u, z, perturb)

    def user_time_of(self, u: Any) -> float:
        return self.problem.sign * -float(u)

    def options(self, settings: _Backward) -> dict[str, Any]:
        """The backward solver's options, with the error norm over the augmented state."""
        options = dict(settings.options)
        if "norm" in SOLVERS[settings.method].option_names():
            options["norm"] = self.norm(settings)
        return options

    def norm(self, settings: _Backward) -> Callable[[Any], float]:
        """torchdiffeq's default: the largest of |t_bar|, the state's norm of y and of a, and
        the RMS of each parameter's adjoint (left out with the seminorm)."""
        problem, n = self.problem, self.n
        if settings.user_norm is not None:
            return UserNorm(settings.user_norm, self.device, self._split)
        state_norm = problem.options.get("norm")
        params = [] if settings.seminorm else self.param_bounds
        if state_norm is None or isinstance(state_norm, SegmentRMS):
            inner = state_norm.bounds if isinstance(state_norm, SegmentRMS) else [(0, n)]
            bounds = [(0, 1)] + [(a + 1, b + 1) for a, b in inner] + \
                [(a + 1 + n, b + 1 + n) for a, b in inner] + list(params)
            return SegmentRMS(bounds, self.xp)

        def mixed(z: Any) -> float:
            return max(abs(float(z[0])), state_norm(z[1:1 + n]), state_norm(z[1 + n:1 + 2 * n]),
                       *(rms_norm(z[a:b]) for a, b in params))

        return mixed

    def _split(self, z: Tensor) -> tuple[Tensor, ...]:
        """A user's adjoint norm gets (t_bar, *y, *a, *theta_bar) (y, a as the user's state)."""
        n, problem = self.n, self.problem
        y, a = z[1:1 + n], z[1 + n:1 + 2 * n]
        if problem.shapes is None:
            states = (y.reshape(self.shape), a.reshape(self.shape))
        else:
            states = (*problem.components(y), *problem.components(a))
        return (z[0], *states, *(z[a_:b].reshape(p.shape) for (a_, b), p in
                                 zip(self.param_bounds, self.params)))

