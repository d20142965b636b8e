"""``odeint_event``: solve until an event, with gradients through the time of the event.

The event time tau solves g(tau, y(tau)) = 0, so it moves with whatever moves the solution:
d tau = -(dg/dy . dy) / (dg/dt + dg/dy . f). The gradient that reaches tau (and the one that
reaches y(tau) through tau, dy(tau)/d tau = f) is passed on to the state at the event, whose own
backward (through the solver, or the adjoint) carries it to y0, t0 and the parameters
(torchdiffeq's implicit-function rerouting).
"""

from __future__ import annotations

from typing import Any, Callable

import pullback
from pullback import Tensor
from pullback.autograd import Function, FunctionCtx

from ._odeint import odeint


def odeint_event(func: Callable[..., Any], y0: Any, t0: Any, *, event_fn: Callable[..., Any],
                 reverse_time: bool = False, odeint_interface: Callable[..., Any] = odeint,
                 **kwargs: Any) -> tuple[Tensor, Any]:
    """Integrate from ``t0`` until ``event_fn(t, y)`` first crosses zero.

    Args:
        func: ``func(t, y)`` -> dy/dt, as for :func:`odeint`.
        y0: the initial state (a Tensor or a tuple of Tensors).
        t0: the initial time (a 0-d Tensor, which may require grad, or a number).
        event_fn: ``event_fn(t, y)`` -> Tensor; the event is where any element first changes
            sign.
        reverse_time: integrate towards decreasing time.
        odeint_interface: :func:`odeint` (backpropagation through the solver) or
            :func:`odeint_adjoint`.
        **kwargs: passed to ``odeint_interface`` (rtol, atol, method, options, adjoint_...).

    Returns:
        ``(event_t, y)``: the event time (differentiable) and the states at ``t0`` and at the
        event (time on axis 0, as odeint returns them; differentiable, including through
        ``event_t``).

    Example::

        >>> import pullback as pb
        >>> from pullback.sutra import odeint_event
        >>> height = pb.tensor([10.0], dtype=pb.float64, requires_grad=True)
        >>> state = (height, pb.zeros(1, dtype=pb.float64))            # falling from rest
        >>> t, (x, v) = odeint_event(lambda t, s: (s[1], -9.81 + 0 * s[1]), state,
        ...                          pb.tensor(0.0, dtype=pb.float64),
        ...                          event_fn=lambda t, s: s[0])       # hits the ground
        >>> round(float(t), 6)                                          # sqrt(2 h / g)
        1.427843
        >>> t.backward()
        >>> round(float(height.grad[0]), 6)                             # 1 / (g t)
        0.071392
    """
    if not isinstance(t0, Tensor):
        t0 = pullback.tensor(float(t0), dtype=pullback.float64)
    start = t0.reshape(-1)
    t = pullback.cat([start, start.detach() + (-1.0 if reverse_time else 1.0)])
    event_t, solution = odeint_interface(func, y0, t, event_fn=event_fn, **kwargs)
    is_tuple = isinstance(solution, tuple)
    parts = solution if is_tuple else (solution,)
    with pullback.no_grad():
        signs = _sign(event_fn(t0, y0))
    rerouted = _EventGradient.apply(func, _combined(event_fn, signs), is_tuple, event_t,
                                    *[p[-1] for p in parts])
    event_t, states = rerouted[0], rerouted[1:]
    parts = tuple(pullback.cat([p[:-1], s.unsqueeze(0)]) for p, s in zip(parts, states))
    return event_t, parts if is_tuple else parts[0]


def _sign(value: Any) -> Tensor:
    value = value if isinstance(value, Tensor) else pullback.tensor(value)
    return (value > 0).to(value.dtype) - (value < 0).to(value.dtype)


def _combined(event_fn: Callable[..., Any], signs: Tensor) -> Callable[..., Tensor]:
    """One scalar event function, positive at the start, crossing zero with the first element
    of ``event_fn`` that does (as odeint's search does)."""
    return lambda t, y: (event_fn(t, y) * signs).min()


class _EventGradient(Function):
    """Identity forward; backward reroutes the event time's gradient to the state there."""

    @staticmethod
    def forward(ctx: FunctionCtx, func: Any, event_fn: Any, is_tuple: bool, event_t: Tensor,
                *state: Tensor) -> tuple[Tensor, ...]:
        ctx.func, ctx.event_fn, ctx.is_tuple = func, event_fn, is_tuple
        ctx.save_for_backward(event_t, *state)
        return (event_t, *state)

    @staticmethod
    def backward(ctx: FunctionCtx, grad_t: Tensor, *grad_state: Tensor) -> Any:
        event_t, *state = ctx.saved_tensors
        event_t = event_t.detach()
        state = [s.detach() for s in state]

        def user(parts: list[Tensor]) -> Any:
            return tuple(parts) if ctx.is_tuple else parts[0]

        with pullback.no_grad():
            rate = ctx.func(event_t.to(state[0].dtype), user(state))
        rates = list(rate) if ctx.is_tuple else [rate]
        with pullback.enable_grad():
            t_in = event_t.clone()
            t_in.requires_grad = True
            s_in = [s.clone() for s in state]
            for s in s_in:
                s.requires_grad = True
            value = ctx.event_fn(t_in, user(s_in))
            d_t, *d_state = pullback.autograd.grad(value, [t_in, *s_in], allow_unused=True)
        d_t = 0.0 if d_t is None else d_t
        d_state = [pullback.zeros_like(s) if d is None else d for s, d in zip(state, d_state)]
        # The event's total time derivative, and what L gains per unit of later event.
        dg_dt = d_t + sum((d * f).sum() for d, f in zip(d_state, rates))
        dl_dt = grad_t + sum((g * f).sum() for g, f in zip(grad_state, rates))
        shift = -dl_dt / (dg_dt + 1e-12)
        return (None, None, None, None,
                *[g + d * shift.to(d.dtype) for g, d in zip(grad_state, d_state)])
