"""``spanda.leaky``: the membrane of leaky integrate-and-fire neurons, all time steps in one op.

Inputs ``(x, u0, beta, threshold)``: the input current, ``(T, *S)`` (``sequence=True``) or one
step ``S``; the membrane before the first step (broadcastable to ``S``; a number for a fresh
neuron); the decay, clamped to [0, 1] as snnTorch does; the threshold. The output is the
membrane that spikes are read from, ``H(u_t - threshold)`` (``spanda.spike``), shaped as ``x``.

With ``s_{t-1} = H(u_{t-1} - threshold)``, the attribute ``reset`` picks the recurrence:

=====================  ==============================================  =========================
``reset``              ``u_t =``                                       used by
=====================  ==============================================  =========================
``subtract``           ``beta u_{t-1} + x_t - threshold s_{t-1}``      delayed reset (snnTorch)
``zero``               ``beta (1 - s_{t-1}) u_{t-1} + x_t``            LIF's delayed zero reset
``zero_input``         ``(1 - s_{t-1}) (beta u_{t-1} + x_t)``          Synaptic/RLeaky's (snnTorch)
``none``               ``beta u_{t-1} + x_t``                          no reset
``subtract_immediate`` ``beta (u_{t-1} - threshold s_{t-1}) + x_t``    immediate reset
``zero_immediate``     ``beta (1 - s_{t-1}) u_{t-1} + x_t``            immediate reset
=====================  ==============================================  =========================

Delayed forms are snnTorch's default (``reset_delay=True``): the membrane a spike is read from
is reported before its reset, which comes one step later, and ``u0`` is itself reset when it
is above the threshold. Immediate forms output the membrane before the reset of the same step
(the neuron reports ``u - threshold s`` itself); their ``u0`` is an already-reset membrane,
so the first step does not reset it (``s_{-1} = 0``).

``detach_reset=True`` treats ``s`` as a constant in backward (snnTorch's delayed reset does);
otherwise its gradient is ``surrogate``'s derivative (snnTorch's ``reset_delay=False``).

Forward is a loop over time on raw arrays; backward is the adjoint recurrence
``a_t = g_t + a_{t+1} du_{t+1}/du_t``, written once with ``F`` ops so that ``create_graph=True``
differentiates it again. For the common case (``subtract``, detached) ``du_{t+1}/du_t`` is
``beta``: two array operations per step, and no graph nodes at all.
"""

from __future__ import annotations

from typing import Any

from pullback.registry import Op

DELAYED_FORMS = ("subtract", "zero", "zero_input", "none")
IMMEDIATE_FORMS = ("subtract_immediate", "zero_immediate")
FORMS = DELAYED_FORMS + IMMEDIATE_FORMS


def _as_dtype(xp: Any, value: Any, dtype: Any) -> Any:
    """A Python number stays one (NumPy treats it as weakly typed); arrays take ``dtype`` so that a
    float64 parameter does not turn a float32 membrane into float64."""
    if isinstance(value, (int, float)):
        return float(value)
    return xp.asarray(value, dtype=dtype)


def _clamp01(xp: Any, beta: Any) -> Any:
    # A scalar beta (the usual case) becomes a Python float: clipping a 0-d array costs ~20 us,
    # more than the rest of a small step.
    if isinstance(beta, float) or beta.ndim == 0:
        return min(max(float(beta), 0.0), 1.0)
    return xp.clip(beta, 0.0, 1.0)


def _leaky_kernel(xp: Any) -> Any:
    def leaky(x: Any, u0: Any, beta: Any, threshold: Any, *, reset: str, detach_reset: bool,
              surrogate: Any, sequence: bool) -> Any:
        xs = x if sequence else x[None]
        dtype = xs.dtype
        b = _clamp01(xp, _as_dtype(xp, beta, dtype))
        thr = xp.asarray(threshold, dtype=dtype)  # an array, so bool * thr stays in dtype
        prev = _as_dtype(xp, u0, dtype)
        out = xp.empty(xs.shape, dtype=dtype)
        immediate = reset in IMMEDIATE_FORMS
        for t in range(xs.shape[0]):
            o = out[t]
            fires = None if reset == "none" or (immediate and t == 0) else xp.greater(prev, thr)
            if reset == "subtract_immediate" and fires is not None:
                prev = prev - fires * thr
            xp.multiply(b, prev, out=o)
            if reset == "subtract":
                o += xs[t]
                o -= fires * thr  # fires * thr is exactly thr or 0: rounds as snnTorch does
            elif reset == "zero_input":
                o += xs[t]
                xp.copyto(o, 0, where=fires)
            else:
                if fires is not None and reset != "subtract_immediate":
                    xp.copyto(o, 0, where=fires)  # zero, zero_immediate
                o += xs[t]
            prev = o
        return out if sequence else out[0]

    return leaky


LEAKY = Op("spanda.leaky", _leaky_kernel, save_output=True,
           doc="leaky integrate-and-fire membrane over time (reset by subtraction, to zero, none)")


def _without_first(F: Any, a: Any) -> Any:
    """``a`` with its first time step zeroed (an immediate reset never resets ``u0``)."""
    return F.cat(F.full((1,) + tuple(a.shape[1:]), 0.0, like=a), a[1:], axis=0)


def _previous(F: Any, out: Any, u0: Any) -> Any:
    """``u_{t-1}`` for every step: ``u0`` then the output but its last step."""
    step = tuple(out.shape[1:])
    if isinstance(u0, (int, float)):
        first = F.full((1,) + step, float(u0), like=out)
    else:
        first = F.reshape(F.broadcast_to(u0, shape=step), shape=(1,) + step)
    return F.cat(first, out[:-1], axis=0)


def _coefficients(F: Any, reset: str, prev: Any, x: Any, b: Any, thr: Any, s: Any,
                  sigma: Any) -> tuple[Any, Any, Any, Any]:
    """``(du_t/du_{t-1}, du_t/dx_t, du_t/dbeta, du_t/dthreshold)`` for every step; ``None`` means
    ``beta``, ``1``, ``1`` and ``0`` respectively (skipped work). ``sigma`` is ``None`` for a
    detached reset."""
    if reset == "none":
        return None, None, prev, None
    if reset == "subtract":
        if sigma is None:
            return None, None, prev, -s
        return b - thr * sigma, None, prev, thr * sigma - s
    if reset == "subtract_immediate":
        d_beta = prev - thr * s
        if sigma is None:
            return None, None, d_beta, -b * s
        return b * (1.0 - thr * sigma), None, d_beta, b * (thr * sigma - s)
    kept = 1.0 - s
    if reset == "zero_input":
        drive = b * prev + x
        if sigma is None:
            return b * kept, kept, kept * prev, None
        return b * kept - drive * sigma, kept, kept * prev, drive * sigma
    # zero, zero_immediate
    if sigma is None:
        return b * kept, None, kept * prev, None
    return b * kept - b * prev * sigma, None, kept * prev, b * prev * sigma


def clamped_beta(F: Any, beta: Any) -> Any:
    """``beta`` clamped to [0, 1] as the kernel clamps it (a Python float where it is a number,
    or a 0-d array in a first-order backward: see ``_clamp01``)."""
    if isinstance(beta, (int, float)):
        return min(max(float(beta), 0.0), 1.0)
    if not F.differentiable and beta.ndim == 0:
        return min(max(float(beta), 0.0), 1.0)
    return F.clamp(beta, min=0.0, max=1.0)


def linearization(F: Any, out: Any, x: Any, u0: Any, b: Any, threshold: Any, *, reset: str,
                  detach_reset: bool, surrogate: Any) -> tuple[Any, Any, Any, Any]:
    """The derivatives of each step, ``(du_t/du_{t-1}, du_t/dx_t, du_t/dbeta,
    du_t/dthreshold)`` (see :func:`_coefficients`) for sequence-shaped ``out`` and ``x``: what
    the backward's adjoint recurrence and the forward-mode tangent recurrence both run on."""
    prev = _previous(F, out, u0)
    s = sigma = None
    if reset != "none":
        s = F.cast(F.greater(prev, threshold), dtype=out.dtype)
        if not detach_reset:
            sigma = surrogate.derivative(F, prev - threshold)
            if isinstance(sigma, (int, float)):  # straight-through: a constant
                sigma = F.full(tuple(prev.shape), float(sigma), like=out)
        if reset in IMMEDIATE_FORMS:
            s = _without_first(F, s)
            sigma = None if sigma is None else _without_first(F, sigma)
    return _coefficients(F, reset, prev, x, b, threshold, s, sigma)


def beta_inside(F: Any, beta: Any) -> Any:
    """Where ``beta`` is inside [0, 1], the only place its clamp passes a derivative."""
    return F.logical_and(F.greater_equal(beta, 0.0), F.less_equal(beta, 1.0))


@LEAKY.def_grad
def _leaky_grad(F: Any, g: Any, out: Any, x: Any, u0: Any, beta: Any, threshold: Any, *,
                reset: str, detach_reset: bool, surrogate: Any, sequence: bool,
                needs: Any) -> Any:
    b = clamped_beta(F, beta)
    # Only the common case skips u_{t-1}: a detached subtract reset (or none) with a fixed beta
    # and threshold needs nothing but beta in backward.
    simple = reset in ("subtract", "none", "subtract_immediate") and detach_reset
    if simple and not sequence and not (needs[2] or needs[3]):
        # One step of it (a step-by-step loop's every node): dx = g, du0 = beta g.
        return g, (g * b if needs[1] else None), None, None
    x_shape = tuple(x.shape)
    if not sequence:
        x, g, out = (F.reshape(a, shape=(1,) + x_shape) for a in (x, g, out))
    steps = out.shape[0]
    if not simple or needs[2] or needs[3]:
        d_prev, d_x, d_beta, d_thr = linearization(F, out, x, u0, b, threshold, reset=reset,
                                                   detach_reset=detach_reset,
                                                   surrogate=surrogate)
    else:
        d_prev, d_x, d_beta, d_thr = None, None, None, None

    # The adjoint recurrence, backwards in time.
    a = g[steps - 1]
    adjoints = [a]
    for t in range(steps - 2, -1, -1):
        a = g[t] + a * (b if d_prev is None else d_prev[t + 1])
        adjoints.append(a)
    adjoints.reverse()
    adj = F.stack(*adjoints, axis=0)

    grad_x = adj if d_x is None else adj * d_x
    if not sequence:
        grad_x = F.reshape(grad_x, shape=x_shape)
    grad_u0 = None
    if needs[1]:
        grad_u0 = adjoints[0] * (b if d_prev is None else d_prev[0])
    grad_beta = None
    if needs[2]:
        grad_beta = F.where(beta_inside(F, beta), F.sum(adj * d_beta, axis=0), 0.0)
    # A detached zero reset (or none) does not depend on the threshold: no gradient.
    grad_thr = F.sum(adj * d_thr, axis=0) if needs[3] and d_thr is not None else None
    return grad_x, grad_u0, grad_beta, grad_thr
