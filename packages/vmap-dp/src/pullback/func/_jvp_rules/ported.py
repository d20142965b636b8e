"""jvp rules of ops core added for ported PyTorch code that no family rule covers exactly:
cumprod and logcumsumexp (scans), scatter_reduce."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.dtypes import finfo


def _cumprod(F: Any, tangents: Any, out: Any, x: Any, *, axis: int) -> Any:
    # d out_j = sum_{i <= j} t_i prod_{k <= j, k != i} x_k. Before a row's first zero z the
    # product is out_j / x_i; the z-th term is t_z times the cumprod with x_z set to 1; terms
    # past z hold x_z = 0.
    t = tangents[0]
    zero = F.equal(x, 0)
    seen = F.cumsum(F.cast(zero, dtype=np.dtype(np.int64)), axis=axis)
    before = F.equal(seen, 0)
    first_zero = F.logical_and(zero, F.equal(seen, 1))
    ratio = F.where(before, t / F.where(zero, 1.0, x), 0.0)
    skipped = F.cumprod(F.where(first_zero, 1.0, x), axis=axis)
    t_z = F.sum(F.where(first_zero, t, 0.0), axis=axis, keepdims=True)
    return out * F.cumsum(ratio, axis=axis) + F.where(F.greater(seen, 0), t_z * skipped, 0.0)


def _logcumsumexp(F: Any, tangents: Any, out: Any, x: Any, *, axis: int) -> Any:
    # d out_j = sum_{i <= j} exp(x_i - out_j) t_i, in log space for the positive and negative
    # parts of t (the lowest finite number standing for log 0), so that nothing overflows.
    t = tangents[0]
    lowest = float(finfo(t.dtype).min)

    def part(w: Any) -> Any:
        pos = F.greater(w, 0)
        logw = F.where(pos, F.log(F.where(pos, w, 1.0)), lowest)
        return F.exp(F.logcumsumexp(x + logw, axis=axis) - out)

    return part(t) - part(F.neg(t))


def _scatter_reduce(F: Any, tangents: Any, out: Any, x: Any, idx: Any, src: Any, *, axis: int,
                    reduce: str, include_self: bool) -> Any:
    # Every reduction's tangent is a sum scatter of weighted tangents: sum and mean are linear,
    # prod weighs each factor's tangent by out / factor, amax/amin average the tied values'.
    tx, _, ts = tangents
    tx = F.full(tuple(x.shape), 0.0, like=x) if tx is None else tx
    ts = F.full(tuple(src.shape), 0.0, like=src) if ts is None else ts
    key = tuple(slice(0, n) for n in idx.shape)
    if tuple(src.shape) != tuple(idx.shape):
        src, ts = F.getitem(src, key=key), F.getitem(ts, key=key)

    def summed(a: Any, b: Any, how: str = "sum") -> Any:
        return F.scatter_reduce(a, idx, b, axis=axis, reduce=how, include_self=include_self)

    if reduce in ("sum", "mean"):
        return summed(tx, ts, reduce)
    if reduce == "prod":
        return out * summed(tx / x, ts / src)
    self_ties = F.cast(F.equal(x, out), dtype=x.dtype)
    src_ties = F.cast(F.equal(src, F.gather(out, idx, axis=axis)), dtype=x.dtype)
    return summed(self_ties * tx, src_ties * ts) / summed(self_ties, src_ties)


RULES = {"cumprod": _cumprod, "logcumsumexp": _logcumsumexp, "scatter_reduce": _scatter_reduce}
