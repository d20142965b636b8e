"""Records of the scans and PyTorch-named reductions (:mod:`pullback._ops.scans`): cumprod,
cummax, cummin, logcumsumexp, std_mean, var_mean, aminmax, nansum, nanmean, count_nonzero."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

import pullback as pb

from ...dtypes import is_floating
from ...errors import AxisError, ShapeError
from ._inputs import FLOATS, INTS, exact, maker, nonzero, values
from ._record import Arg, ErrorCase, OpRecord, Sample

SampleFn = Callable[[np.dtype, np.random.Generator], list[Sample]]
_F64 = np.dtype(np.float64)


def _scan_samples(make: Callable[..., np.ndarray] = nonzero, **bounds: float) -> SampleFn:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mk = maker(make, dtype, rng, **bounds)
        return [
            Sample((Arg(mk((3, 4))),), {"dim": 1}),
            Sample((Arg(mk((3, 4))),), {"dim": 0}),
            Sample((Arg(mk((2, 3, 4))),), {"dim": -1}),
            Sample((Arg(mk(())),), {"dim": 0}),
            Sample((Arg(mk((0, 3))),), {"dim": 1}),
            Sample((Arg(mk((1, 3))),), {"dim": 0}),
            Sample((Arg(mk((3, 4)), "transposed"),), {"dim": 1}),
            Sample((Arg(mk((2, 3)), "strided"),), {"dim": 1}),
        ]

    return samples


def _with(base: SampleFn, *more: SampleFn) -> SampleFn:
    return lambda dtype, rng: base(dtype, rng) + [s for m in more for s in m(dtype, rng)]


def _zeros(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Zeros in the rows (one, two in a row, leading): cumprod's exact gradients there."""
    x = exact([[1.5, 0.0, 2.0, -0.5], [0.5, 2.0, 0.0, 0.0], [0.0, -1.5, 0.0, 2.0]], dtype)
    return [Sample((Arg(x),), {"dim": 1}, label="zeros")]


def _spread(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Far-apart values, where exp overflows or underflows: the scan must stay finite."""
    if dtype.itemsize < 4:
        return []
    return [Sample((Arg(exact([[-80.0, 3.0, 90.0, -20.0, 89.0]], dtype)),), {"dim": 1},
                   label="spread")]


def _ties(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Repeated running extrema: the last index among ties, as PyTorch."""
    x = exact([[1, 3, 3, 2, 3, 5, 5], [4, 4, 1, 1, 0, 0, 4]], dtype)
    return [Sample((Arg(x),), {"dim": 1}, label="ties", gradcheck=False)]


def _axis_errors(name: str) -> Callable[[np.random.Generator], list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        x = Arg(nonzero((2, 3), _F64, rng))
        return [ErrorCase((x,), AxisError, rf"{name}.*axis 2.*2 dims", {"dim": 2}),
                ErrorCase((x,), TypeError, rf"{name}.*axis.*required", label="no-axis")]

    return errors


def _scan(name: str, samples: SampleFn, ops: Sequence[str], dtypes: Sequence[str]) -> OpRecord:
    return OpRecord(name=name, fn=getattr(pb, name), torch=(lambda t: getattr(t, name)),
                    ops=tuple(ops), dtypes=tuple(dtypes), samples=samples,
                    errors=_axis_errors(name))


def _stat_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((3, 4))),)), Sample((Arg(mk((3, 4))),), {"dim": 1}),
            Sample((Arg(mk((2, 3, 4))),), {"dim": (0, 2), "keepdim": True}),
            Sample((Arg(mk((3, 4))),), {"dim": 0, "correction": 0}),
            Sample((Arg(mk((3, 4)), "transposed"),), {"dim": 1})]


def _minmax_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    # Distinct values: at ties PyTorch's aminmax splits gradients as amin/amax do.
    def distinct(shape: tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        return (rng.permutation(n) - n // 2).reshape(shape).astype(dtype)

    return [Sample((Arg(distinct((3, 4))),)), Sample((Arg(distinct((3, 4))),), {"dim": 1}),
            Sample((Arg(distinct((3, 4))),), {"dim": 0, "keepdim": True}),
            Sample((Arg(distinct(())),)),
            Sample((Arg(distinct((3, 4)), "transposed"),), {"dim": -1})]


def _nan_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    out = [Sample((Arg(mk((3, 4))),)), Sample((Arg(mk((3, 4))),), {"dim": 1}),
           Sample((Arg(mk((2, 3, 4))),), {"dim": (0, 2), "keepdim": True})]
    if is_floating(dtype):
        x = exact([[np.nan, 1.5, -0.5], [0.5, np.nan, np.nan], [1.0, 2.0, 0.25]], dtype)
        out += [Sample((Arg(x),), label="nan"), Sample((Arg(x),), {"dim": 1}, label="nan-rows")]
    return out


def _count_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = values((3, 4), dtype, rng, -1, 1)
    return [Sample((Arg(x),)), Sample((Arg(x),), {"dim": 1}), Sample((Arg(x),), {"dim": (0, 1)}),
            Sample((Arg(values((), dtype, rng, -1, 1)),)),
            Sample((Arg(x, "transposed"),), {"dim": 0})]


RECORDS = [
    _scan("cumprod", _with(_scan_samples(), _zeros), ("cumprod",), FLOATS + INTS),
    _scan("logcumsumexp", _with(_scan_samples(values), _spread), ("logcumsumexp",),
          ("bfloat16", "float32", "float64")),
    _scan("cummax", _with(_scan_samples(), _ties), ("cumextremum_index", "gather"),
          FLOATS + INTS),
    _scan("cummin", _with(_scan_samples(), _ties), ("cumextremum_index", "gather"),
          FLOATS + INTS),
    OpRecord(name="var_mean", fn=pb.var_mean, torch=lambda t: t.var_mean,
             ops=("mean", "sum"), dtypes=("float32", "float64"), samples=_stat_samples),
    OpRecord(name="std_mean", fn=pb.std_mean, torch=lambda t: t.std_mean,
             ops=("mean", "sum", "sqrt"), dtypes=("float32", "float64"), samples=_stat_samples),
    OpRecord(name="aminmax", fn=pb.aminmax, torch=lambda t: t.aminmax, ops=("amin", "amax"),
             dtypes=("float32", "float64", "int64"), samples=_minmax_samples,
             errors=lambda rng: [ErrorCase((Arg(np.zeros((0, 2))),), ShapeError,
                                           r"aminmax.*empty.*\(0, 2\)")]),
    OpRecord(name="nansum", fn=pb.nansum, torch=lambda t: t.nansum, ops=("sum", "where"),
             dtypes=("float32", "float64", "int64"), samples=_nan_samples,
             note="NaN counts as 0 and gets gradient 0."),
    OpRecord(name="nanmean", fn=pb.nanmean, torch=lambda t: t.nanmean,
             ops=("sum", "where", "div"), dtypes=("float32", "float64"), samples=_nan_samples),
    OpRecord(name="count_nonzero", fn=pb.count_nonzero, torch=lambda t: t.count_nonzero,
             ops=("not_equal", "sum"), dtypes=("float32", "float64", "int64", "bool"),
             samples=_count_samples, differentiable=False),
]
