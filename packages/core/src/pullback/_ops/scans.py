"""Scans and the reductions ported code asks for by PyTorch's names: cumprod, cummax, cummin,
logcumsumexp, std_mean, var_mean, aminmax, nansum, nanmean, count_nonzero.

cumprod and logcumsumexp are ops with their own rules (below); cummax/cummin compute indices
with a non-differentiable op and read the values at them (the gradient goes to the running
extremum's element, as in PyTorch); the rest are compositions of existing reductions.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from ..dispatch import apply
from ..dtypes import finfo
from ..errors import ShapeError
from ..promotion import FLOAT
from ..registry import Op
from ._axes import normalize_axes, pick_axis
from ._declare import declare


def _reverse_cumsum(F: Any, a: Any, axis: int) -> Any:
    return F.flip(F.cumsum(F.flip(a, axis=(axis,)), axis=axis), axis=(axis,))


CUMPROD = declare(Op("cumprod", lambda xp: lambda x, axis: xp.cumprod(x, axis=axis),
                     save_output=True, family="scan", doc="cumulative product along an axis"))


@CUMPROD.def_grad
def _cumprod_grad(F: Any, g: Any, out: Any, x: Any, axis: int) -> Any:
    # d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Where x_i != 0 that is
    # out_j / x_i, so grad_i = revcumsum(g * out)_i / x_i. At the first zero z of a row the
    # products skip x_z: they are the cumprod of x1 (the row with x_z set to 1), so grad_z is
    # revcumsum(g * cumprod(x1))_z.
    zero = F.equal(x, 0)
    safe = F.where(zero, 1.0, x)
    regular = F.div(_reverse_cumsum(F, g * out, axis), safe)
    seen = F.cumsum(F.cast(zero, dtype=np.dtype(np.int64)), axis=axis)
    first_zero = F.logical_and(zero, F.equal(seen, 1))
    x1 = F.where(first_zero, 1.0, x)
    out1 = F.cumprod(x1, axis=axis)
    grad = F.where(first_zero, _reverse_cumsum(F, g * out1, axis), regular)
    later_zero = F.logical_and(zero, F.greater(seen, 1))
    if bool(later_zero.any()):
        # Past z every product holds x_z, and more zeros follow: grad_i = x_z * (the gradient
        # of cumprod(x1) at i), recursively. x_z is 0, but kept as a factor so that higher
        # derivatives through it are exact.
        x_z = F.sum(F.where(first_zero, x, 0.0), axis=axis, keepdims=True)
        after = F.greater(seen - F.cast(first_zero, dtype=np.dtype(np.int64)), 0)
        grad = F.where(after, x_z * _cumprod_grad(F, g, out1, x1, axis)[0], grad)
    return (grad,)


def _logcumsumexp_kernel(xp: Any) -> Any:
    def logcumsumexp(x: Any, axis: int) -> Any:
        with np.errstate(invalid="ignore"):  # -inf + -inf inside logaddexp, as in PyTorch
            return xp.logaddexp.accumulate(x, axis=axis)

    return logcumsumexp


LOGCUMSUMEXP = declare(Op("logcumsumexp", _logcumsumexp_kernel, save_output=True,
                          promotion=FLOAT, family="scan",
                          doc="log of the cumulative sum of exp along an axis"))


@LOGCUMSUMEXP.def_grad
def _logcumsumexp_grad(F: Any, g: Any, out: Any, x: Any, axis: int) -> Any:
    # grad_i = sum_{j >= i} g_j exp(x_i - out_j) = exp(x_i) * revcumsum(g e^-out): computed in
    # log space for the positive and the negative parts of g, so that nothing overflows. The
    # log of a zero part is the lowest finite number, not -inf (PyTorch's formula): -inf would
    # turn into inf - inf = NaN in the next order.
    lowest = float(finfo(g.dtype).min)

    def part(w: Any) -> Any:
        pos = F.greater(w, 0)
        logw = F.where(pos, F.log(F.where(pos, w, 1.0)), lowest)
        rev = F.flip(F.logcumsumexp(F.flip(logw - out, axis=(axis,)), axis=axis), axis=(axis,))
        return F.exp(rev + x)

    return (part(g) - part(F.neg(g)),)


def _cumextremum_index_kernel(xp: Any) -> Any:
    def cumextremum_index(x: Any, axis: int, largest: bool) -> Any:
        # The running extremum's last position (PyTorch's >= / <=): running max of the
        # positions where x reaches the running extremum. NaN, once met, stays the extremum.
        acc = xp.maximum if largest else xp.minimum
        running = acc.accumulate(x, axis=axis)
        n = x.shape[axis]
        shape = [1] * x.ndim
        shape[axis] = n
        positions = xp.arange(n).reshape(shape)
        hit = (x == running) | (xp.isnan(x) & xp.isnan(running)) if x.dtype.kind == "f" else (
            x == running)
        return xp.maximum.accumulate(xp.where(hit, positions, 0), axis=axis).astype(xp.int64)

    return cumextremum_index


CUMEXTREMUM_INDEX = declare(Op("cumextremum_index", _cumextremum_index_kernel,
                               differentiable=False, family="scan",
                               doc="index of the running max (or min) along an axis"))


def _scan_axis(x: Any, axis: Any, dim: Any, name: str) -> int:
    axis = pick_axis(axis, dim)
    if axis is None:
        raise TypeError(f"{name}: an axis (dim) is required")
    return normalize_axes(axis, max(x.ndim, 1), name)[0]


def _scan(op: Op, x: Any, axis: int, **attrs: Any) -> Any:
    from .shape import reshape

    if x.ndim == 0:  # a 0-d tensor scans as one element
        return reshape(apply(op, reshape(x, (1,)), axis=0, **attrs), ())
    return apply(op, x, axis=axis, **attrs)


def cumprod(x: Any, axis: int | None = None, *, dim: int | None = None, dtype: Any = None) -> Any:
    """Cumulative product along one axis (integers and bools in int64; ``dtype=`` casts the
    input first). Exact gradients at zeros, of every order."""
    from .reduce import _accumulation_input

    return _scan(CUMPROD, _accumulation_input(x, dtype), _scan_axis(x, axis, dim, "cumprod"))


def logcumsumexp(x: Any, axis: int | None = None, *, dim: int | None = None) -> Any:
    """``log(cumsum(exp(x)))`` along one axis, computed without overflow."""
    return _scan(LOGCUMSUMEXP, x, _scan_axis(x, axis, dim, "logcumsumexp"))


def _cumextremum(x: Any, axis: Any, dim: Any, largest: bool, name: str) -> Any:
    from .index import GATHER
    from .shape import reshape
    from .sort import ValuesIndices

    a = _scan_axis(x, axis, dim, name)
    x1 = reshape(x, (1,)) if x.ndim == 0 else x
    idx = apply(CUMEXTREMUM_INDEX, x1, axis=a, largest=largest)
    values = apply(GATHER, x1, idx, axis=a)
    if x.ndim == 0:
        values, idx = reshape(values, ()), reshape(idx, ())
    return ValuesIndices(values, idx)


def cummax(x: Any, axis: int | None = None, *, dim: int | None = None) -> Any:
    """``(values, indices)`` of the running maximum along one axis (the last index among
    ties, as PyTorch)."""
    return _cumextremum(x, axis, dim, True, "cummax")


def cummin(x: Any, axis: int | None = None, *, dim: int | None = None) -> Any:
    """``(values, indices)`` of the running minimum along one axis."""
    return _cumextremum(x, axis, dim, False, "cummin")


def var_mean(x: Any, dim: Any = None, *, correction: float = 1, keepdim: bool = False,
             unbiased: bool | None = None) -> tuple[Any, Any]:
    """``(var, mean)`` over ``dim`` (see :func:`pullback.var`)."""
    from .reduce import mean, var

    return (var(x, dim, correction=correction, keepdims=keepdim, unbiased=unbiased),
            mean(x, dim, keepdims=keepdim))


def std_mean(x: Any, dim: Any = None, *, correction: float = 1, keepdim: bool = False,
             unbiased: bool | None = None) -> tuple[Any, Any]:
    """``(std, mean)`` over ``dim`` (see :func:`pullback.std`)."""
    from .reduce import mean, std

    return (std(x, dim, correction=correction, keepdims=keepdim, unbiased=unbiased),
            mean(x, dim, keepdims=keepdim))


MinMax = namedtuple("MinMax", ["min", "max"])


def aminmax(x: Any, *, dim: int | None = None, keepdim: bool = False) -> Any:
    """``(min, max)`` over all elements or along ``dim``."""
    from .reduce import amax, amin

    if x.numel() == 0 and dim is None:
        raise ShapeError(f"aminmax: cannot reduce an empty tensor (shape {tuple(x.shape)})")
    return MinMax(amin(x, dim, keepdims=keepdim), amax(x, dim, keepdims=keepdim))


def nansum(x: Any, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
           keepdim: bool | None = None, dtype: Any = None) -> Any:
    """Sum treating NaN as 0 (whose gradient is 0 there)."""
    from .elementwise import isnan, where
    from .reduce import sum as sum_

    if x.dtype.kind in "fV":
        x = where(isnan(x), 0.0, x)
    return sum_(x, axis, keepdims, dim=dim, keepdim=keepdim, dtype=dtype)


def nanmean(x: Any, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
            keepdim: bool | None = None) -> Any:
    """Mean of the non-NaN elements (NaN where there are none)."""
    from .elementwise import isnan, logical_not
    from .reduce import sum as sum_

    count = sum_(logical_not(isnan(x)), axis, keepdims, dim=dim, keepdim=keepdim)
    return nansum(x, axis, keepdims, dim=dim, keepdim=keepdim) / count


def count_nonzero(x: Any, dim: Any = None) -> Any:
    """The number of nonzero elements (int64), over all of ``x`` or along ``dim``."""
    from .elementwise import ne
    from .reduce import sum as sum_

    return sum_(ne(x, 0), dim)


METHODS = ("cumprod", "cummax", "cummin", "logcumsumexp", "aminmax", "nansum", "nanmean",
           "count_nonzero")
