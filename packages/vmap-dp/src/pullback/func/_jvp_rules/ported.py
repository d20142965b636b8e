"""jvp rules of ops core added for ported PyTorch code that no family rule covers exactly:
cumprod and logcumsumexp (scans), scatter_reduce, and the matrix functions of pullback.linalg
(the differentials of inv, det, solve, cholesky, qr, svd, eigh and expm; the decompositions'
with the same conventions as their grad rules: eigh sees the symmetric part of the tangent)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback._ops.decompositions import inverse_gaps
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


def _mT(F: Any, x: Any) -> Any:  # noqa: N802
    return F.swapaxes(x, a=-1, b=-2)


def _trace(F: Any, m: Any) -> Any:
    return F.sum(F.mul(m, F.eye(m.shape[-1], like=m)), axis=(-2, -1))


def _diag(F: Any, m: Any) -> Any:
    return F.sum(F.mul(m, F.eye(m.shape[-1], like=m)), axis=-1)


def _inv(F: Any, tangents: Any, out: Any, x: Any) -> Any:
    return F.neg(F.matmul(out, F.matmul(tangents[0], out)))


def _det(F: Any, tangents: Any, out: Any, x: Any) -> Any:
    return F.mul(out, _trace(F, F.solve(x, tangents[0])))


def _logabsdet(F: Any, tangents: Any, out: Any, x: Any) -> Any:
    return _trace(F, F.solve(x, tangents[0]))


def _solve(F: Any, tangents: Any, out: Any, a: Any, b: Any) -> Any:
    ta, tb = tangents
    rhs = tb if tb is not None else F.mul(out, 0.0)
    if ta is not None:
        rhs = F.sub(rhs, F.matmul(ta, out))
    return F.solve(a, rhs)


def _cholesky(F: Any, tangents: Any, out: Any, x: Any) -> Any:
    # dL = L phi(L^-1 dA L^-T), phi: the lower triangle with the diagonal halved.
    linv = F.inv(out)
    inner = F.matmul(linv, F.matmul(tangents[0], _mT(F, linv)))
    half = F.mul(F.mul(inner, F.eye(inner.shape[-1], like=inner)), 0.5)
    return F.matmul(out, F.sub(F.tril(inner), half))


def _matrix_exp(F: Any, tangents: Any, out: Any, x: Any) -> Any:
    n = x.shape[-1]
    zeros = F.mul(x, 0.0)
    block = F.cat(F.cat(x, tangents[0], axis=-1), F.cat(zeros, x, axis=-1), axis=-2)
    return F.getitem(F.matrix_exp(block), key=(Ellipsis, slice(0, n), slice(n, 2 * n)))


def _qr(F: Any, tangents: Any, out: Any, x: Any, *, part: str) -> Any:
    # C = Q^T dA R^-1; Omega = tril(C, -1) - tril(C, -1)^T; dR = (C - Omega) R,
    # dQ = (dA - Q dR) R^-1 (m >= n).
    t = tangents[0]
    q, r = F.qr(x, part="Q"), F.qr(x, part="R")
    c = _mT(F, F.solve(_mT(F, r), _mT(F, F.matmul(_mT(F, q), t))))
    low = F.tril(c, k=-1)
    dr = F.matmul(F.sub(c, F.sub(low, _mT(F, low))), r)
    if part == "R":
        return dr
    return _mT(F, F.solve(_mT(F, r), _mT(F, F.sub(t, F.matmul(q, dr)))))


def _svd(F: Any, tangents: Any, out: Any, x: Any, *, part: str) -> Any:
    t = tangents[0]
    u, s, vh = F.svd(x, part="U"), F.svd(x, part="S"), F.svd(x, part="Vh")
    v = _mT(F, vh)
    p = F.matmul(_mT(F, u), F.matmul(t, v))  # U^T dA V
    if part == "S":
        return _diag(F, p)
    gaps = inverse_gaps(F, F.mul(s, s))
    s_row = F.reshape(s, shape=tuple(s.shape[:-1]) + (1, s.shape[-1]))
    s_col = F.reshape(s, shape=tuple(s.shape) + (1,))
    if part == "U":
        inner = F.mul(gaps, F.add(F.mul(p, s_row), F.mul(s_col, _mT(F, p))))
        outside = F.matmul(t, v)
        outside = F.sub(outside, F.matmul(u, F.matmul(_mT(F, u), outside)))
        return F.add(F.matmul(u, inner), F.div(outside, s_row))
    inner = F.mul(gaps, F.add(F.mul(s_col, p), F.mul(_mT(F, p), s_row)))
    outside = F.matmul(_mT(F, t), u)
    outside = F.sub(outside, F.matmul(v, F.matmul(vh, outside)))
    return _mT(F, F.add(F.matmul(v, inner), F.div(outside, s_row)))


def _eigh(F: Any, tangents: Any, out: Any, x: Any, *, part: str, uplo: str = "L") -> Any:
    t = tangents[0]
    sym = F.mul(F.add(t, _mT(F, t)), 0.5)
    v = F.eigh(x, part="vectors", uplo=uplo)
    p = F.matmul(_mT(F, v), F.matmul(sym, v))
    if part == "values":
        return _diag(F, p)
    return F.matmul(v, F.mul(inverse_gaps(F, F.eigh(x, part="values", uplo=uplo)), p))


def _unique(F: Any, tangents: Any, out: Any, x: Any, **attrs: Any) -> Any:
    from pullback.errors import AutogradError

    raise AutogradError("unique: has no derivative (as in PyTorch); detach its input first")


RULES = {"unique": _unique, "cumprod": _cumprod, "logcumsumexp": _logcumsumexp,
         "scatter_reduce": _scatter_reduce,
         "inv": _inv, "det": _det, "logabsdet": _logabsdet, "solve": _solve,
         "cholesky": _cholesky, "matrix_exp": _matrix_exp, "qr": _qr, "svd": _svd,
         "eigh": _eigh}
