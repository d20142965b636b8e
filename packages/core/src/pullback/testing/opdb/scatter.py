"""Records of the scatter family (:mod:`pullback._ops.scatter`): scatter, scatter_reduce,
index_add, index_copy, index_fill, masked_scatter, put, take.

Writes that overwrite (scatter, index_copy, put) get indices without repeats, where PyTorch's
result is defined; reductions and adds get repeats on purpose.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb

from ...errors import ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRangeError
from ._inputs import maker, nonzero
from ._record import Arg, ErrorCase, OpRecord, Sample

_F64 = np.dtype(np.float64)
_DTYPES = ("float32", "float64")


def _idx(a: Any) -> Arg:
    return Arg(np.asarray(a, dtype=np.int64))


def _distinct_rows(rng: np.random.Generator, rows: int, cols: int, size: int) -> np.ndarray:
    """An index of shape (rows, cols) into an axis of ``size``, no value twice per column."""
    return np.stack([rng.permutation(size)[:rows] for _ in range(cols)], axis=1)


def _scatter_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    idx = _idx(_distinct_rows(rng, 2, 4, 3))
    return [Sample((Arg(mk((3, 4))), 0, idx, Arg(mk((2, 4))))),
            Sample((Arg(mk((3, 4))), 1, _idx([[0, 3], [2, 1], [1, 0]]),
                    Arg(mk((3, 2))))),
            # src larger than the index (PyTorch's gradient of src has the wrong shape there)
            Sample((Arg(mk((3, 4))), 0, idx, Arg(mk((3, 5)), requires_grad=False))),
            Sample((Arg(mk((3, 4))), 0, idx), {"value": 1.5}),
            # PyTorch has no derivative of scatter with reduce: values only.
            *[Sample((Arg(mk((3, 4)), requires_grad=False), 0,
                      _idx([[0, 1, 0, 2], [0, 1, 1, 2]]), Arg(mk((2, 4)), requires_grad=False)),
                     {"reduce": reduce}, label="repeats") for reduce in ("add", "multiply")],
            Sample((Arg(mk((3, 4)), "transposed"), 0, idx, Arg(mk((2, 4)), "strided")))]


def _scatter_reduce_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    idx = _idx([[0, 1, 0, 2], [2, 1, 0, 2]])
    out = [Sample((Arg(mk((3, 4))), 0, idx, Arg(mk((2, 4))), reduce),
                  {"include_self": include})
           for reduce in ("sum", "prod", "mean", "amax", "amin") for include in (True, False)]
    out.append(Sample((Arg(mk((2, 3))), 1, _idx([[0, 0], [2, 1]]), Arg(mk((2, 2))), "sum")))
    out.append(Sample((Arg(mk((3, 4)), "transposed"), 0, idx, Arg(mk((2, 4))), "amax")))
    ties = np.asarray([[1.0, 2.0], [1.0, 0.5]], dtype=dtype)
    out.append(Sample((Arg(ties), 0, _idx([[0, 0], [0, 1]]), Arg(ties.copy()), "amax"),
                      label="ties", gradcheck=False))
    return out


def _scatter_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((3, 4), _F64, rng))
    return [ErrorCase((x, 0, _idx([[3, 0, 0, 0]]), Arg(nonzero((1, 4), _F64, rng))),
                      IndexOutOfRangeError, "scatter: index 3 is out of range"),
            ErrorCase((x, 0, _idx([[0, 0, 0, 0]])), ArgumentTypeError, "scatter: give exactly one")]


def _along_samples(kind: str) -> Any:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mk = maker(nonzero, dtype, rng)
        unique = kind != "add"
        rows = _idx([2, 0] if unique else [2, 0, 2])
        cols = _idx([3, 1] if unique else [1, 1])
        if kind == "fill":
            return [Sample((Arg(mk((3, 4))), 0, rows, 1.5)),
                    Sample((Arg(mk((3, 4))), 1, cols, -2.0)),
                    Sample((Arg(mk((3, 4)), "transposed"), 1, cols, 0.5))]
        return [Sample((Arg(mk((3, 4))), 0, rows, Arg(mk((rows.value.size, 4))))),
                Sample((Arg(mk((3, 4))), 1, cols, Arg(mk((3, cols.value.size))))),
                Sample((Arg(mk((3, 4)), "transposed"), 0, rows,
                        Arg(mk((rows.value.size, 4)))))]

    return samples


def _masked_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((3, 4))), Arg(rng.random((3, 4)) < 0.5), Arg(mk((12,))))),
            Sample((Arg(mk((3, 4))), Arg(rng.random((4,)) < 0.5), Arg(mk((3, 5))))),
            Sample((Arg(mk((3, 4)), "transposed"), Arg(rng.random((3, 4)) < 0.5),
                    Arg(mk((4, 4)))))]


def _put_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((3, 4))), _idx([0, 5, -1]), Arg(mk((3,))))),
            Sample((Arg(mk((3, 4))), _idx([[1, 1], [-1, 4]]), Arg(mk((2, 2)))),
                   {"accumulate": True}, label="repeats"),
            Sample((Arg(mk((3, 4)), "transposed"), _idx([2, 7]), Arg(mk((2,)))))]


def _take_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((3, 4))), _idx([0, 5, -1, 5]))),
            Sample((Arg(mk((3, 4))), _idx([[1, 2], [11, 0]]))),
            Sample((Arg(mk((3, 4)), "transposed"), _idx([2, 7]))), Sample((Arg(mk(())), _idx(0)))]


def _method(name: str) -> Any:
    return lambda t: lambda x, *args, **kwargs: getattr(x, name)(*args, **kwargs)


def _record(name: str, samples: Any, ops: tuple[str, ...], torch: Any = None,
            errors: Any = None) -> OpRecord:
    return OpRecord(name=name, fn=getattr(pb, name), torch=torch or (lambda t: getattr(t, name)),
                    ops=ops, dtypes=_DTYPES, samples=samples,
                    **({"errors": errors} if errors else {}))


RECORDS = [
    _record("scatter", _scatter_samples, ("scatter_add", "where", "scatter_reduce"),
            errors=_scatter_errors),
    _record("scatter_reduce", _scatter_reduce_samples, ("scatter_reduce",),
            errors=lambda rng: [ErrorCase((Arg(np.ones((2, 2))), 0, _idx([[0, 1]]),
                                           Arg(np.ones((1, 2))), "max"), ArgumentError,
                                          "scatter_reduce: reduce must be")]),
    _record("index_add", _along_samples("add"), ("take_scatter_add", "add")),
    _record("index_copy", _along_samples("copy"), ("take_scatter_add", "where")),
    _record("index_fill", _along_samples("fill"), ("where",)),
    _record("masked_scatter", _masked_samples, ("cumsum", "take", "where"),
            torch=_method("masked_scatter"),
            errors=lambda rng: [ErrorCase((Arg(np.ones(3)), Arg(np.ones(3)), Arg(np.ones(3))),
                                          DTypeError, "masked_scatter: mask must be bool")]),
    _record("put", _put_samples, ("take_scatter_add",), torch=_method("put")),
    _record("take", _take_samples, ("take",)),
]
