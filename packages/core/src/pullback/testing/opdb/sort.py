"""Records of sorting and searching (:mod:`pullback._ops.sort`): sort, argsort, topk, kthvalue,
median, nanmedian, mode, quantile, unique, searchsorted, bucketize, nonzero, argwhere,
masked_select.

Float samples hold distinct values wherever PyTorch leaves the choice among ties unspecified
(topk, kthvalue, median); integer samples have ties and sort with ``stable=True``.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import pullback as pb

from ...dtypes import is_floating
from ...errors import ArgumentError, DTypeError, ShapeError
from ._inputs import FLOATS, INTS, exact, values
from ._record import Arg, ErrorCase, OpRecord, Sample

SampleFn = Callable[[np.dtype, np.random.Generator], list[Sample]]
_F64 = np.dtype(np.float64)


def _distinct(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Distinct values (a permutation, scaled for floats): no ties anywhere."""
    n = int(np.prod(shape))
    perm = rng.permutation(n) - n // 2
    return (perm * (0.25 if is_floating(dtype) else 1)).reshape(shape).astype(dtype)


def _along_dim(kwargs: Sequence[dict[str, Any]], *, empty: bool = True) -> SampleFn:
    """The shapes and layouts every dim-wise op runs on, with each keyword set on a matrix."""

    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        d = lambda shape: _distinct(shape, dtype, rng)  # noqa: E731
        first = dict(kwargs[0])
        out = [Sample((Arg(d((3, 4))),), dict(kw)) for kw in kwargs]
        out += [Sample((Arg(d((2, 3, 4))),), {**first, "dim": 1}),
                Sample((Arg(d((5,))),), first),
                Sample((Arg(d((3, 4)), "transposed"),), first),
                Sample((Arg(d((2, 4)), "strided"),), first)]
        if empty:
            out.append(Sample((Arg(d((0, 3))),), first))
        return out

    return samples


def _int_ties(kwargs: dict[str, Any]) -> SampleFn:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        x = values((3, 6), dtype, rng, -2, 2)
        return [Sample((Arg(x),), kwargs, label="ties", gradcheck=False)]

    return samples


def _with(*parts: SampleFn) -> SampleFn:
    return lambda dtype, rng: [s for p in parts for s in p(dtype, rng)]


def _nan_rows(kwargs: dict[str, Any], all_nan: bool = True) -> SampleFn:
    """Rows with NaN (one row all NaN unless ``all_nan=False``: where PyTorch's nanmedian
    index is unspecified)."""

    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        if not is_floating(dtype):
            return []
        rows = [[np.nan, 1.5, -0.5, 2.0], [0.5, np.nan, np.nan, 1.0]]
        x = exact(rows + [[np.nan] * 4] if all_nan else rows, dtype)
        return [Sample((Arg(x),), kwargs, label="nan", gradcheck=False)]

    return samples


def _record(name: str, samples: SampleFn, ops: Sequence[str], *,
            dtypes: Sequence[str] = ("float32", "float64", "int64"), torch: Any = None,
            differentiable: bool = True, errors: Any = None, note: str = "") -> OpRecord:
    return OpRecord(name=name, fn=getattr(pb, name),
                    torch=torch or (lambda t: getattr(t, name)), ops=tuple(ops),
                    dtypes=tuple(dtypes), samples=samples, differentiable=differentiable,
                    note=note, **({"errors": errors} if errors else {}))


def _k_errors(name: str, k: int) -> Callable[[np.random.Generator], list[ErrorCase]]:
    return lambda rng: [ErrorCase((Arg(_distinct((2, 3), _F64, rng)), k), ArgumentError,
                                  rf"{name}: k={k}.*size 3")]


def _quantile_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = lambda shape: Arg(_distinct(shape, dtype, rng))  # noqa: E731
    q = Arg(np.asarray([0.1, 0.5, 0.9], dtype=dtype), requires_grad=False)
    out = [Sample((x((3, 4)), 0.3)), Sample((x((3, 4)), 0.3), {"dim": 1}),
           Sample((x((3, 4)), q), {"dim": 0}), Sample((x((3, 4)), q)),
           Sample((x((3, 4)), 0.6), {"dim": 1, "keepdim": True}),
           Sample((x((3, 4)), 0.5), {"keepdim": True}),
           Sample((x((5,)), 1.0)),
           Sample((Arg(_distinct((3, 4), dtype, rng), "transposed"), 0.25), {"dim": 1})]
    out += [Sample((x((2, 5)), 0.4), {"dim": 1, "interpolation": mode})
            for mode in ("lower", "higher", "midpoint", "nearest")]
    out += _nan_rows({"q": 0.5, "dim": 1})(dtype, rng)
    return out


def _quantile_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(_distinct((2, 3), _F64, rng))
    return [ErrorCase((x, 1.5), ArgumentError, r"quantile: q must be.*1\.5"),
            ErrorCase((x, 0.5), ArgumentError, "quantile: interpolation", {"interpolation": "x"})]


def _mode_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    rows = values((3, 7), dtype, rng, 0, 3).astype(dtype)
    return [Sample((Arg(rows),)), Sample((Arg(rows),), {"dim": 0}),
            Sample((Arg(rows),), {"dim": 1, "keepdim": True}),
            Sample((Arg(values((6,), dtype, rng, 0, 2).astype(dtype)),)),
            Sample((Arg(rows, "transposed"),), {"dim": 0})]


def _unique_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = values((3, 5), dtype, rng, -2, 2).astype(dtype)
    rows = np.concatenate([x[:2], x[:1]], axis=0)
    return [Sample((Arg(x),)), Sample((Arg(x),), {"return_inverse": True}),
            Sample((Arg(x),), {"return_counts": True}),
            Sample((Arg(x),), {"return_inverse": True, "return_counts": True}),
            Sample((Arg(rows),), {"dim": 0, "return_inverse": True, "return_counts": True}),
            Sample((Arg(values((0,), dtype, rng)),))]


def _search_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    seq = np.sort(values((6,), dtype, rng, -3, 3)).astype(dtype)
    rows = np.sort(values((2, 5), dtype, rng, -3, 3), axis=1).astype(dtype)
    v = values((2, 3), dtype, rng, -4, 4).astype(dtype)
    ties = np.concatenate([seq[:3], seq[1:2]]).astype(dtype)
    return [Sample((Arg(seq), Arg(v))), Sample((Arg(seq), Arg(v)), {"right": True}),
            Sample((Arg(rows), Arg(v))), Sample((Arg(rows), Arg(v)), {"side": "right"}),
            Sample((Arg(seq), Arg(ties)), {"right": True}, label="ties"),
            Sample((Arg(seq), Arg(v)), {"out_int32": True})]


def _bucketize_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    bounds = np.unique(values((6,), dtype, rng, -3, 3)).astype(dtype)
    x = values((2, 4), dtype, rng, -4, 4).astype(dtype)
    on = bounds[:3].copy()
    return [Sample((Arg(x), Arg(bounds))), Sample((Arg(x), Arg(bounds)), {"right": True}),
            Sample((Arg(on), Arg(bounds)), label="on-bounds"),
            Sample((Arg(on), Arg(bounds)), {"right": True}, label="on-bounds-right")]


def _nonzero_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    m = values((3, 4), dtype, rng, -1, 1)
    return [Sample((Arg(m),)), Sample((Arg(values((2, 3, 2), dtype, rng, -1, 1)),)),
            Sample((Arg(values((5,), dtype, rng, -1, 1)),)), Sample((Arg(m, "transposed"),)),
            Sample((Arg(np.zeros((0, 2), dtype)),))]


def _masked_select_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = lambda shape: Arg(_distinct(shape, dtype, rng))  # noqa: E731
    mask = lambda shape: Arg(np.asarray(rng.random(shape) < 0.5))  # noqa: E731
    return [Sample((x((3, 4)), mask((3, 4)))), Sample((x((3, 4)), mask((4,)))),
            Sample((x((3, 1)), mask((3, 4)))), Sample((x(()), mask(()))),
            Sample((Arg(_distinct((3, 4), dtype, rng), "transposed"), mask((3, 4))))]


_DIMS = [{}, {"dim": 0}, {"dim": 1, "descending": True}]

RECORDS = [
    _record("sort", _with(_along_dim(_DIMS), _int_ties({"stable": True}),
                          _int_ties({"stable": True, "descending": True}),
                          _nan_rows({"dim": 1})), ("argsort", "gather"),
            dtypes=FLOATS + INTS, note="Stable in every case (NaN sorts as the largest)."),
    _record("argsort", _with(_along_dim(_DIMS), _int_ties({"stable": True}),
                             _int_ties({"stable": True, "descending": True})), ("argsort",),
            dtypes=FLOATS + INTS, differentiable=False),
    _record("topk", _along_dim([{"k": 2}, {"k": 3, "dim": 0}, {"k": 1, "largest": False}],
                               empty=False), ("argsort", "gather"),
            errors=_k_errors("topk", 5)),
    _record("kthvalue", _along_dim([{"k": 2}, {"k": 1, "dim": 0},
                                    {"k": 3, "dim": 1, "keepdim": True}], empty=False),
            ("argsort", "gather"), errors=_k_errors("kthvalue", 4)),
    _record("median", _with(_along_dim([{}, {"dim": 1}, {"dim": 0, "keepdim": True}],
                                       empty=False), _nan_rows({"dim": 1}), _nan_rows({})),
            ("argsort", "gather")),
    _record("nanmedian", _with(_along_dim([{}, {"dim": 1}, {"dim": 0, "keepdim": True}],
                                          empty=False), _nan_rows({"dim": 1}, all_nan=False)),
            ("argsort", "gather"), dtypes=("float32", "float64")),
    _record("mode", _mode_samples, ("mode_index", "gather"),
            note="The smallest most frequent value, at its last occurrence (PyTorch's)."),
    _record("quantile", _quantile_samples, ("argsort", "gather"),
            dtypes=("float32", "float64"), errors=_quantile_errors),
    _record("unique", _unique_samples, ("unique",), dtypes=("float64", "int64", "bool"),
            differentiable=False),
    _record("searchsorted", _search_samples, ("searchsorted",), differentiable=False),
    _record("bucketize", _bucketize_samples, ("searchsorted",), differentiable=False,
            errors=lambda rng: [ErrorCase((Arg(np.zeros(3)), Arg(np.zeros((2, 2)))),
                                          ShapeError, r"bucketize.*1-D.*\(2, 2\)")]),
    _record("nonzero", _nonzero_samples, ("nonzero",), dtypes=("float64", "int64", "bool"),
            differentiable=False),
    OpRecord(name="nonzero[as_tuple]", fn=lambda x: pb.nonzero(x, as_tuple=True),
             torch=lambda t: lambda x: t.nonzero(x, as_tuple=True), ops=("nonzero",),
             dtypes=("float64", "int64"), samples=_nonzero_samples, differentiable=False),
    _record("argwhere", _nonzero_samples, ("nonzero",), dtypes=("float64", "bool"),
            differentiable=False),
    _record("masked_select", _masked_select_samples, ("index",),
            errors=lambda rng: [ErrorCase((Arg(np.zeros(3)), Arg(np.zeros(3))), DTypeError,
                                          "masked_select.*bool")]),
]
