"""jvp rules of core's cumprod and logcumsumexp (scans: neither elementwise nor a group
reduction, so no family rule is exact for them)."""

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


RULES = {"cumprod": _cumprod, "logcumsumexp": _logcumsumexp}
