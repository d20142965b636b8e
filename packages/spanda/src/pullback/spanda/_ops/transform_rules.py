"""The function-transform rules of spanda's ops, registered by :mod:`pullback.spanda._plugin`
through ``register_rules`` (the keys pullback.func reads: ``"batch"`` for ``vmap``, ``"jvp"``
for forward mode), written with core's ops only, so that spanda does not depend on
pullback.func.

* ``batch``: a rule gets each argument's value one level below (whole batches) and where its
  batch dim is (``None``: unbatched), and returns the batched result and its batch dim.
  ``spanda.spike`` is elementwise: the batch dims go first and each sample is padded to one
  rank, so that broadcasting lines the samples up. ``spanda.leaky`` runs its loop over time on
  the batch at once: the batch joins the neuron dims, right after time.
* ``jvp``: a rule gets the tangents of the inputs (``None`` for none) and returns the output's.
  The spike's is its backward's surrogate derivative applied forwards (a diagonal Jacobian, so
  the transpose identity with its vjp holds); the membrane's runs the same linearization its
  backward's adjoint recurrence runs on, forwards in time: ``du_t = du_t/du_{t-1} du_{t-1} +
  du_t/dx_t dx_t + du_t/dbeta dbeta + du_t/dthreshold dthreshold``.
"""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op
from pullback.tensor import Tensor

from .leaky import beta_inside, clamped_beta, linearization


def _sample_ndim(value: Any, bdim: int | None) -> int:
    if not isinstance(value, Tensor):
        return 0
    return value.ndim - (bdim is not None)


def _batch_first(value: Any, bdim: int | None, ndim: int) -> Any:
    """A batched tensor with its batch dim first and size-1 dims after it, so that a sample has
    ``ndim`` dims (NumPy aligns shapes from the right); unbatched values are left as they are."""
    if bdim is None:
        return value
    if bdim != 0:
        value = value.movedim(bdim, 0)
    missing = ndim - (value.ndim - 1)
    if missing > 0:
        shape = tuple(value.shape)
        value = value.reshape(shape[:1] + (1,) * missing + shape[1:])
    return value


def spike_batch(op: Op, args: Any, bdims: Any, size: int, /, **attrs: Any) -> Any:
    ndim = max(_sample_ndim(a, b) for a, b in zip(args, bdims))
    return apply(op, *(_batch_first(a, b, ndim) for a, b in zip(args, bdims)), **attrs), 0


def leaky_batch(op: Op, args: Any, bdims: Any, size: int, /, *, sequence: bool,
                **attrs: Any) -> Any:
    x, *params = args
    bx, *bparams = bdims
    at = 1 if sequence else 0  # where the batch goes in x: after time
    if bx is None:  # a batched parameter (vmap over betas, say): every sample reads x
        shape = tuple(x.shape)
        x = x.unsqueeze(at).broadcast_to(shape[:at] + (size,) + shape[at:])
    elif bx != at:
        x = x.movedim(bx, at)
    neuron_ndim = x.ndim - at - 1
    params = [_batch_first(p, b, neuron_ndim) for p, b in zip(params, bparams)]
    return apply(op, x, *params, sequence=sequence, **attrs), at


def spike_jvp(F: Any, tangents: Any, out: Any, u: Any, threshold: Any, *,
              surrogate: Any) -> Any:
    tu, tt = tangents
    if tu is None and tt is None:
        return None
    direction = tu if tt is None else (F.neg(tt) if tu is None else tu - tt)
    return direction * surrogate.derivative(F, u - threshold)


def leaky_jvp(F: Any, tangents: Any, out: Any, x: Any, u0: Any, beta: Any, threshold: Any, *,
              reset: str, detach_reset: bool, surrogate: Any, sequence: bool) -> Any:
    tx, tu0, tbeta, tthr = tangents
    b = clamped_beta(F, beta)
    if not sequence:
        x, out = (F.reshape(a, shape=(1,) + tuple(a.shape)) for a in (x, out))
        tx = None if tx is None else F.reshape(tx, shape=(1,) + tuple(tx.shape))
    d_prev, d_x, d_beta, d_thr = linearization(F, out, x, u0, b, threshold, reset=reset,
                                               detach_reset=detach_reset, surrogate=surrogate)
    if tbeta is not None:  # the clamp passes a derivative inside [0, 1] only
        tbeta = F.where(beta_inside(F, beta), tbeta, 0.0)
    step = tuple(out.shape[1:])
    tangent = (F.full(step, 0.0, like=out) if tu0 is None
               else F.broadcast_to(tu0, shape=step))
    steps = []
    for t in range(out.shape[0]):
        tangent = tangent * (b if d_prev is None else d_prev[t])
        if tx is not None:
            tangent = tangent + (tx[t] if d_x is None else tx[t] * d_x[t])
        if tbeta is not None:
            tangent = tangent + d_beta[t] * tbeta
        if tthr is not None and d_thr is not None:
            tangent = tangent + d_thr[t] * tthr
        steps.append(tangent)
    return F.stack(*steps, axis=0) if sequence else steps[0]


RULES = {
    ("spanda.spike", "batch"): spike_batch,
    ("spanda.leaky", "batch"): leaky_batch,
    ("spanda.spike", "jvp"): spike_jvp,
    ("spanda.leaky", "jvp"): leaky_jvp,
}
