"""Reductions: sum, mean, prod, amax/amin, logsumexp, norm, cumsum, and the non-differentiable
argmax/argmin/all/any. ``sum_to`` (the gradient of broadcasting) lives here too.

Every reduction takes ``axis`` (None, an int or a tuple) and ``keepdims``; the public functions
also accept PyTorch's ``dim``/``keepdim`` spellings.
"""

from __future__ import annotations

import builtins
import math
from typing import Any, Callable

import numpy as np

from ..dispatch import apply
from ..dtypes import int64, to_dtype
from ..promotion import FLOAT
from ..registry import Op
from ._axes import kept_shape, normalize_axes, pick_axis, to_axis_attr
from ._declare import declare


def _accumulating(xp: Any, fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run in float32 on float16/bfloat16 input, the result cast back, as PyTorch does.

    NumPy accumulates float16 partly in float16 (across outer loops: a float16 ``cumsum`` of 1000
    times 0.1 gives 105) and ml_dtypes' bfloat16 entirely in bfloat16 (its ``sum`` gives 32).
    """

    def kernel(x: Any, *args: Any, **kwargs: Any) -> Any:
        if x.dtype.itemsize == 2 and x.dtype.kind in "fV":  # float16, bfloat16
            return fn(x.astype(xp.float32), *args, **kwargs).astype(x.dtype)
        return fn(x, *args, **kwargs)

    return kernel


def _kept_integer(x: Any) -> Any:
    """The dtype argument that keeps an integer input's dtype (NumPy would widen int8 sums to
    int64; the public functions choose the accumulation dtype before the kernel, as PyTorch)."""
    return x.dtype if x.dtype.kind in "iu" else None


def _sum_kernel(xp: Any) -> Any:
    return _accumulating(xp, lambda x, axis=None, keepdims=False: xp.sum(
        x, axis=axis, keepdims=keepdims, dtype=_kept_integer(x)))


def _mean_kernel(xp: Any) -> Any:
    return _accumulating(xp, lambda x, axis=None, keepdims=False: xp.mean(
        x, axis=axis, keepdims=keepdims))


def _prod_kernel(xp: Any) -> Any:
    return _accumulating(xp, lambda x, axis=None, keepdims=False: xp.prod(
        x, axis=axis, keepdims=keepdims, dtype=_kept_integer(x)))


def _amax_kernel(xp: Any) -> Any:
    return lambda x, axis=None, keepdims=False: xp.max(x, axis=axis, keepdims=keepdims)


def _amin_kernel(xp: Any) -> Any:
    return lambda x, axis=None, keepdims=False: xp.min(x, axis=axis, keepdims=keepdims)


SUM = declare(Op("sum", _sum_kernel, save_inputs=False, doc="sum over axes"))
MEAN = declare(Op("mean", _mean_kernel, save_inputs=False, promotion=FLOAT,
                  doc="mean over axes"))
PROD = declare(Op("prod", _prod_kernel, save_output=True, doc="product over axes"))
AMAX = declare(Op("amax", _amax_kernel, save_output=True, doc="max over axes"))
AMIN = declare(Op("amin", _amin_kernel, save_output=True, doc="min over axes"))


def _expand_back(F: Any, g: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    """Reshape a reduced gradient so that it broadcasts against the input."""
    if keepdims:
        return g
    return F.reshape(g, shape=kept_shape(x.shape, axis))


@SUM.def_grad
def _sum_grad(F: Any, g: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return (F.broadcast_to(_expand_back(F, g, x, axis, keepdims), shape=tuple(x.shape)),)


@MEAN.def_grad
def _mean_grad(F: Any, g: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    count = 1
    for a in normalize_axes(axis, x.ndim, "mean"):
        count *= x.shape[a]
    g = _expand_back(F, g, x, axis, keepdims) * (1.0 / builtins.max(count, 1))
    return (F.broadcast_to(g, shape=tuple(x.shape)),)


@PROD.def_grad
def _prod_grad(F: Any, g: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    # The gradient is the product of the *other* elements.
    g = _expand_back(F, g, x, axis, keepdims)
    if F.differentiable:
        # Under create_graph the rule is differentiated again: use exclusive products (a
        # polynomial in x), exact to any order even at zeros.
        return (g * _product_of_others(F, x, axis),)
    # First order: out / x where x has no zero; where exactly one element is zero, that
    # element gets the product of the rest and the others get 0.
    out = _expand_back(F, out, x, axis, keepdims)
    is_zero = F.equal(x, 0)
    zeros = F.sum(F.cast(is_zero, dtype=x.dtype), axis=axis, keepdims=True)
    safe_x = F.where(is_zero, 1.0, x)
    others_if_one_zero = F.prod(safe_x, axis=axis, keepdims=True)
    no_zero = g * out / safe_x
    one_zero = F.where(F.logical_and(is_zero, F.equal(zeros, 1)), g * others_if_one_zero, 0.0)
    return (F.where(F.equal(zeros, 0), no_zero, one_zero),)


def _product_of_others(F: Any, x: Any, axis: Any) -> Any:
    """For each element, the product of the other elements of its reduction group."""
    axes = normalize_axes(axis, x.ndim, "prod")
    if x.ndim == 0:
        return F.full((), 1.0, like=x)
    rest = [d for d in range(x.ndim) if d not in axes]
    order = tuple(rest + list(axes))
    moved = F.permute(x, axes=order)
    lead = tuple(x.shape[d] for d in rest)
    flat = F.reshape(moved, shape=lead + (math.prod(x.shape[d] for d in axes),))
    last = len(lead)
    before = _exclusive_cumprod(F, flat)
    after = F.flip(_exclusive_cumprod(F, F.flip(flat, axis=(last,))), axis=(last,))
    others = F.reshape(before * after, shape=tuple(moved.shape))
    inverse = [0] * x.ndim
    for i, d in enumerate(order):
        inverse[d] = i
    return F.permute(others, axes=tuple(inverse))


def _exclusive_cumprod(F: Any, a: Any) -> Any:
    """Products of the elements before each one along the last axis (a log-step scan built
    from slices, concatenation and products, so that it differentiates exactly)."""
    n = a.shape[-1]
    last = a.ndim - 1
    if n == 0:
        return a

    def ones(k: int) -> Any:
        return F.full(tuple(a.shape[:-1]) + (k,), 1.0, like=a)

    scan, shift = a, 1
    while shift < n:
        shifted = F.cat(ones(shift), F.getitem(scan, key=(Ellipsis, slice(0, n - shift))),
                        axis=last)
        scan = scan * shifted
        shift *= 2
    return F.cat(ones(1), F.getitem(scan, key=(Ellipsis, slice(0, n - 1))), axis=last)


def _extremum_grad(F: Any, g: Any, out: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    # Ties share the gradient evenly (PyTorch's amax/amin convention).
    out = _expand_back(F, out, x, axis, keepdims)
    g = _expand_back(F, g, x, axis, keepdims)
    mask = F.cast(F.equal(x, out), dtype=x.dtype)
    count = F.sum(mask, axis=axis, keepdims=True)
    return (mask * (g / count),)


AMAX.def_grad(lambda F, g, out, x, axis=None, keepdims=False: _extremum_grad(
    F, g, out, x, axis, keepdims))
AMIN.def_grad(lambda F, g, out, x, axis=None, keepdims=False: _extremum_grad(
    F, g, out, x, axis, keepdims))


def _logsumexp_kernel(xp: Any) -> Any:
    def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        if x.size == 0:  # an empty sum is 0 and its log -inf (no max to shift by), as PyTorch
            return xp.full(xp.sum(x, axis=axis, keepdims=keepdims).shape, -xp.inf, x.dtype)
        m = xp.max(x, axis=axis, keepdims=True)
        m = xp.where(xp.isfinite(m), m, 0)  # all -inf (or inf) along the axis: no shift
        out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
        if keepdims:
            return out
        return out.reshape(()) if axis is None else xp.squeeze(out, axis=axis)

    return _accumulating(xp, logsumexp)


LOGSUMEXP = declare(Op("logsumexp", _logsumexp_kernel, save_output=True, promotion=FLOAT,
                       doc="log(sum(exp(x))) over axes, stable"))


@LOGSUMEXP.def_grad
def _logsumexp_grad(F: Any, g: Any, out: Any, x: Any, axis: Any = None,
                    keepdims: bool = False) -> Any:
    out = _expand_back(F, out, x, axis, keepdims)
    return (_expand_back(F, g, x, axis, keepdims) * F.exp(x - out),)


def _norm2_kernel(xp: Any) -> Any:
    return _accumulating(xp, lambda x, axis=None, keepdims=False: xp.sqrt(
        xp.sum(x * x, axis=axis, keepdims=keepdims)))


NORM2 = declare(Op("norm2", _norm2_kernel, save_output=True, promotion=FLOAT,
                   doc="Euclidean norm over axes"))


@NORM2.def_grad
def _norm2_grad(F: Any, g: Any, out: Any, x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    # x / ||x||, with 0 where the norm is 0 (PyTorch's subgradient choice).
    out = _expand_back(F, out, x, axis, keepdims)
    g = _expand_back(F, g, x, axis, keepdims)
    safe = F.where(F.equal(out, 0), 1.0, out)
    return (F.where(F.equal(out, 0), 0.0, g * x / safe),)


def _cumsum_kernel(xp: Any) -> Any:
    # reshape: NumPy flattens a 0-d input to shape (1,); PyTorch keeps ().
    return _accumulating(xp, lambda x, axis: xp.cumsum(
        x, axis=axis, dtype=_wide_sum(xp, x)).astype(x.dtype, copy=False).reshape(x.shape))


def _wide_sum(xp: Any, x: Any) -> Any:
    """The dtype a cumulative sum of ``x`` runs in: float64 (complex128) for float32
    (complex64) on the CPU, as PyTorch's CPU kernel accumulates (its ``acc_type`` is double):
    a float32 running sum's error grows with its length (1,025 values in [0, 1): 3e-4 off the
    exact sums in float32, 2.7e-5 -- the final rounding -- in double); integers keep their
    dtype (see :func:`_kept_integer`)."""
    if xp is np and x.dtype in (np.float32, np.complex64):
        return np.float64 if x.dtype == np.float32 else np.complex128
    return _kept_integer(x)


CUMSUM = declare(Op("cumsum", _cumsum_kernel, save_inputs=False,
                    doc="cumulative sum along an axis"))


@CUMSUM.def_grad
def _cumsum_grad(F: Any, g: Any, out: Any, x: Any, axis: int) -> Any:
    if g.ndim == 0:
        return (g,)
    rev = F.flip(g, axis=(axis,))
    return (F.flip(F.cumsum(rev, axis=axis), axis=(axis,)),)


def _sum_to_kernel(xp: Any) -> Any:
    def sum_to(x: Any, shape: tuple[int, ...]) -> Any:
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, s in enumerate(shape) if s == 1 and x.shape[lead + i] != 1
        )
        if axes:
            x = xp.sum(x, axis=axes, keepdims=True)
        return x.reshape(shape)

    return _accumulating(xp, sum_to)


SUM_TO = declare(Op("sum_to", _sum_to_kernel, save_inputs=False,
                    doc="sum a broadcast array down to shape"))
SUM_TO.def_grad(lambda F, g, out, x, shape: (F.broadcast_to(g, shape=tuple(x.shape)),))


def _index_reduction(name: str, fn: str, doc: str) -> Op:
    def make(xp: Any) -> Any:
        f = getattr(xp, fn)
        return lambda x, axis=None, keepdims=False: f(x, axis=axis, keepdims=keepdims)

    return declare(Op(name, make, differentiable=False, doc=doc))


ARGMAX = _index_reduction("argmax", "argmax", "index of the max")
ARGMIN = _index_reduction("argmin", "argmin", "index of the min")
ALL = _index_reduction("all", "all", "all true")
ANY = _index_reduction("any", "any", "any true")


# -- public functions -------------------------------------------------------------------------

def _checked_axis(x: Any, axis: Any, dim: Any, name: str, single: bool = False) -> Any:
    """``axis`` (or ``dim``), after checking it against ``x``: the error names the op and the
    axis (NumPy's own would be an IndexError naming neither)."""
    axis = to_axis_attr(pick_axis(axis, dim))
    if axis is None:
        return None
    if single and not isinstance(axis, int):
        raise TypeError(f"{name}: expects one axis (an int) or None, got {axis!r}")
    normalize_axes(axis, x.ndim, name)
    # A 0-d tensor has one "axis", 0 or -1 (alone or in a tuple), as in PyTorch: all of it.
    return None if x.ndim == 0 else axis


def _accumulation_input(x: Any, dtype: Any) -> Any:
    """``x`` cast for sum, prod and cumsum: to ``dtype`` when given (PyTorch casts the input
    first), else integers and bools to int64 (PyTorch's accumulation type; NumPy's would give
    uint64 for uint8)."""
    if dtype is not None:
        dtype = to_dtype(dtype)
    elif x.dtype.kind in "biu":
        dtype = int64
    return x if dtype is None or dtype == x.dtype else x.to(dtype)


def _reduction(op: Op, single: bool = False, accumulates: bool = False) -> Any:
    def fn(x: Any, axis: Any = None, keepdims: bool = False, *, dim: Any = None,
           keepdim: bool | None = None, dtype: Any = None) -> Any:
        axis = _checked_axis(x, axis, dim, op.name, single)
        if accumulates:
            x = _accumulation_input(x, dtype)
        elif dtype is not None:
            x = x.to(to_dtype(dtype))
        return apply(op, x, axis=axis, keepdims=keepdim if keepdim is not None else keepdims)

    fn.__name__ = op.name
    fn.__doc__ = f"{op.doc[0].upper()}{op.doc[1:]} (``axis``/``dim``, ``keepdims``/``keepdim``)."
    if accumulates:
        fn.__doc__ += (" Integers and bools accumulate in int64; ``dtype=`` casts the input "
                       "first, as in PyTorch.")
    elif op is MEAN:
        fn.__doc__ += (" Integers give the default dtype; ``dtype=`` casts the input first, as "
                       "in PyTorch.")
    return fn


sum, prod = _reduction(SUM, accumulates=True), _reduction(PROD, accumulates=True)  # noqa: A001
mean, amax, amin = map(_reduction, (MEAN, AMAX, AMIN))
logsumexp = _reduction(LOGSUMEXP)
argmax, argmin = _reduction(ARGMAX, single=True), _reduction(ARGMIN, single=True)
all, any = _reduction(ALL), _reduction(ANY)  # noqa: A001


def max(x: Any, axis: Any = None, keepdims: bool = False, *, dim: Any = None,  # noqa: A001
        keepdim: bool | None = None) -> Any:
    """Max over all elements, or ``(values, indices)`` along one axis (PyTorch's convention).

    Over all elements the gradient is shared among ties, as for :func:`amax`; along an axis it
    goes to the returned index (the first maximum), as in PyTorch.
    """
    return _extremum("max", AMAX, ARGMAX, x, axis, dim, keepdim if keepdim is not None else
                     keepdims)


def min(x: Any, axis: Any = None, keepdims: bool = False, *, dim: Any = None,  # noqa: A001
        keepdim: bool | None = None) -> Any:
    """Min over all elements, or ``(values, indices)`` along one axis (see :func:`max`)."""
    return _extremum("min", AMIN, ARGMIN, x, axis, dim, keepdim if keepdim is not None else
                     keepdims)


def _extremum(name: str, reduce_op: Op, index_op: Op, x: Any, axis: Any, dim: Any,
              keep: bool) -> Any:
    from .index import GATHER
    from .shape import reshape

    given = pick_axis(axis, dim)
    axis = _checked_axis(x, axis, dim, name, single=True)
    if given is None:
        return apply(reduce_op, x, axis=None, keepdims=keep)
    shape = tuple(x.shape)
    if x.ndim == 0:  # one element along "dim 0"
        x, axis = reshape(x, 1), 0
    axis = normalize_axes(axis, x.ndim, name)[0]  # gather's gradient wants it non-negative
    # The values are the input read at the indices, so the gradient flows to those indices.
    indices = apply(index_op, x, axis=axis, keepdims=True)
    values = apply(GATHER, x, indices, axis=axis)
    if not shape or not keep:  # a 0-d input gives 0-d results, keepdim or not
        out_shape = tuple(n for d, n in enumerate(x.shape) if d != axis) if shape else ()
        values, indices = reshape(values, out_shape), reshape(indices, out_shape)
    return _ValuesIndices(values, indices)


class _ValuesIndices(tuple):
    """``(values, indices)`` with attribute access, like PyTorch's return type."""

    def __new__(cls, values: Any, indices: Any) -> _ValuesIndices:
        return super().__new__(cls, (values, indices))

    @property
    def values(self) -> Any:
        return self[0]

    @property
    def indices(self) -> Any:
        return self[1]


def var(x: Any, axis: Any = None, *, correction: float = 1, keepdims: bool = False,
        dim: Any = None, keepdim: bool | None = None, unbiased: bool | None = None) -> Any:
    """Variance with Bessel's ``correction`` (1 by default, as in PyTorch).

    With no degrees of freedom left (``correction`` >= the number of elements) the result is
    inf, or NaN where the elements are all equal, as in PyTorch and NumPy.
    """
    axis = _checked_axis(x, axis, dim, "var")
    keep = keepdim if keepdim is not None else keepdims
    if unbiased is not None:
        correction = 1 if unbiased else 0
    n = 1
    for a in normalize_axes(axis, x.ndim, "var"):
        n *= x.shape[a]
    centered = x - apply(MEAN, x, axis=axis, keepdims=True)
    total = apply(SUM, centered * centered, axis=axis, keepdims=keep)
    denom = n - correction
    return total / denom if denom > 0 else total * math.inf


def std(x: Any, axis: Any = None, *, correction: float = 1, keepdims: bool = False,
        dim: Any = None, keepdim: bool | None = None, unbiased: bool | None = None) -> Any:
    """Standard deviation: ``sqrt(var(...))``."""
    from .elementwise import sqrt

    _checked_axis(x, axis, dim, "std")
    return sqrt(var(x, axis, correction=correction, keepdims=keepdims, dim=dim,
                    keepdim=keepdim, unbiased=unbiased))


def norm(x: Any, ord: Any = 2, axis: Any = None, keepdims: bool = False, *,  # noqa: A002
         dim: Any = None, keepdim: bool | None = None, p: Any = None) -> Any:
    """Vector norm over ``axis`` (all elements by default): ord 2, 1, inf, -inf, 0, or any
    other p (``sum(|x|^p)^(1/p)``, negative p included, as ``torch.linalg.vector_norm``).

    At a zero vector the gradient is 0 (PyTorch's choice of subgradient).
    """
    from .elementwise import abs as abs_, pow as pow_, where

    ord = p if p is not None else ord
    axis = _checked_axis(x, axis, dim, "norm")
    keep = keepdim if keepdim is not None else keepdims
    if ord == 2 or ord == "fro":
        return apply(NORM2, x, axis=axis, keepdims=keep)
    if ord == 1:
        return apply(SUM, abs_(x), axis=axis, keepdims=keep)
    if ord == float("inf"):
        return apply(AMAX, abs_(x), axis=axis, keepdims=keep)
    if ord == float("-inf"):
        return apply(AMIN, abs_(x), axis=axis, keepdims=keep)
    if ord == 0:
        return apply(SUM, (x != 0).to(x.dtype), axis=axis, keepdims=keep)
    if isinstance(ord, (int, float)) and ord > 0:
        total = apply(SUM, pow_(abs_(x), ord), axis=axis, keepdims=keep)
        # total ** (1/ord) has an infinite slope at 0: take the root of a safe value there, so
        # that the zero vector's gradient is 0 instead of inf * 0 = NaN.
        zero = total == 0
        return where(zero, 0.0, pow_(where(zero, 1.0, total), 1.0 / ord))
    if isinstance(ord, (int, float)) and ord < 0:
        return pow_(apply(SUM, pow_(abs_(x), ord), axis=axis, keepdims=keep), 1.0 / ord)
    raise TypeError(f"norm: ord must be a number or 'fro', got {ord!r}")


def cumsum(x: Any, axis: int | None = None, *, dim: int | None = None, dtype: Any = None) -> Any:
    """Cumulative sum along one axis (integers and bools accumulate in int64; ``dtype=``
    casts the input first, as in PyTorch)."""
    axis = pick_axis(axis, dim)
    if axis is None:
        raise TypeError("cumsum: an axis is required")
    return apply(CUMSUM, _accumulation_input(x, dtype),
                 axis=normalize_axes(axis, x.ndim, "cumsum")[0])


def sum_to(x: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``x`` down to ``shape`` (the adjoint of :func:`broadcast_to`)."""
    return apply(SUM_TO, x, shape=tuple(shape))
