"""Indexing records: basic slicing, integer-array and boolean-mask indexing, gather,
take_along_axis, scatter_add, index_select, masked_fill, one_hot.

Index arrays hold repeated entries on purpose: the gradients must scatter-*add* there.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb

from ...errors import DTypeError, IndexOutOfRangeError, ShapeError
from ._inputs import ALL, FLOATS, INTS, exact, maker, nonzero, values
from ._record import Arg, ErrorCase, OpRecord, Sample

_I64 = np.dtype(np.int64)
_BOOL = np.dtype(bool)


def _idx(data: Any, dtype: Any = _I64) -> Arg:
    return Arg(np.asarray(data, dtype=dtype))


def _basic_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    x = lambda shape=(3, 4), layout="contiguous": Arg(mk(shape), layout)  # noqa: E731
    return [
        Sample((x(), 1)), Sample((x(), -1)), Sample((x(), slice(1, 3))),
        Sample((x(), (slice(None), slice(None, None, 2)))), Sample((x(), (Ellipsis, 1))),
        Sample((x(), (None, slice(None), 1))), Sample((x(), (1, 2))), Sample((x(), slice(0, 0))),
        Sample((x(), (slice(None), slice(-2, None)))), Sample((x(()), ())), Sample((x(()), None)),
        Sample((x((2, 3, 4)), (0, Ellipsis, slice(1, 3)))),
        Sample((x((3, 4), "transposed"), (slice(1, None), slice(None, None, 2)))),
        Sample((x((2, 3), "strided"), (Ellipsis, 0))),
    ]


def _advanced_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    x = lambda shape=(4, 3), layout="contiguous": Arg(mk(shape), layout)  # noqa: E731
    mask = Arg(np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=bool))
    return [
        Sample((x(), _idx([0, 2, 2, 1])), label="repeated"),
        Sample((x(), _idx([[0, 1], [3, 3]]))),
        Sample((x(), _idx([-1, 0, -1])), label="negative"),
        Sample((x(), [0, 0, 2]), label="list"),
        Sample((x(), (slice(None), _idx([2, 0, 2])))),
        Sample((x(), (_idx([0, 1, 1]), _idx([2, 2, 0])))),
        Sample((x(), mask), label="mask"),
        Sample((x(), _idx([True, False, True, True], _BOOL)), label="mask-rows"),
        Sample((x(), (_idx([1, 1]), slice(0, 2)))),
        Sample((x(), _idx([], _I64)), label="empty"),
        Sample((x(), _idx([3, 0, 3], np.int32)), label="int32"),
        Sample((x((3, 4), "transposed"), (_idx([1, 1, 0]), _idx([2, 0, 2])))),
    ]


def _getitem_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((3, 4), np.dtype(np.float64), rng))
    return [
        ErrorCase((x, 5), IndexOutOfRangeError, "getitem.*index 5.*size 3"),
        ErrorCase((x, (0, 0, 0)), IndexOutOfRangeError, "getitem.*too many indices"),
        ErrorCase((x, _idx([0, 7])), IndexOutOfRangeError, "index.*7.*size 3"),
        ErrorCase((x, Arg(np.array([0.0, 1.0]))), DTypeError, "index.*integer or bool.*float64"),
        ErrorCase((x, _idx([True, False], _BOOL)), IndexOutOfRangeError, "index.*boolean"),
    ]


def _torch_getitem(t: Any) -> Callable[..., Any]:
    return lambda x, key: x[key]


def _gather_index(rng: np.random.Generator, shape: tuple[int, ...], high: int) -> Arg:
    return Arg(rng.integers(0, high, size=shape).astype(np.int64))


def _gather_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [
        Sample((Arg(mk((3, 4))), 1, _gather_index(rng, (3, 5), 4)), label="repeated"),
        Sample((Arg(mk((3, 4))), 0, _gather_index(rng, (2, 4), 3))),
        Sample((Arg(mk((3, 4))), -1, _gather_index(rng, (2, 2), 4)), label="smaller-index"),
        Sample((Arg(mk((3, 4))), 1, _gather_index(rng, (3, 0), 4)), label="empty"),
        Sample((Arg(mk((3, 4)), "transposed"), 0, _gather_index(rng, (3, 4), 3))),
        Sample((Arg(mk((2, 3, 2))), 1, _gather_index(rng, (2, 4, 2), 3))),
    ]


def _gather_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((3, 4), np.dtype(np.float64), rng))
    return [
        ErrorCase((x, 1, _idx([[0, 4]] * 3)), IndexOutOfRangeError, "gather.*4"),
        ErrorCase((x, 1, _idx([[0, -1]] * 3)), IndexOutOfRangeError, "gather: index -1.*size 4"),
        ErrorCase((x, 1, _idx([0, 1])), ShapeError, r"gather.*1 dims.*\(3, 4\)"),
        ErrorCase((x, 1, Arg(np.zeros((3, 1)))), DTypeError, "gather.*integer.*float64"),
    ]


def _take_along_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [
        Sample((Arg(mk((3, 4))), _gather_index(rng, (3, 5), 4), 1), label="repeated"),
        Sample((Arg(mk((3, 4))), _gather_index(rng, (1, 2), 4), 1), label="broadcast"),
        Sample((Arg(mk((3, 4))), _gather_index(rng, (2, 4), 3), 0)),
        Sample((Arg(mk((3, 4)), "transposed"), _gather_index(rng, (3, 2), 4), -1)),
    ]


def _take_along_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((3, 4), np.dtype(np.float64), rng))
    return [ErrorCase((x, _idx([0, 1]), 1), ShapeError, r"take_along_axis.*1 dims.*\(3, 4\)"),
            ErrorCase((x, _idx([[4]] * 3), 1), IndexOutOfRangeError, "gather.*4")]


def _scatter_add_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [
        Sample((Arg(mk((3, 4))), 0, _gather_index(rng, (2, 4), 3), Arg(mk((2, 4)))),
               label="repeated"),
        Sample((Arg(mk((3, 4))), 1, _gather_index(rng, (3, 2), 4), Arg(mk((3, 3)))),
               label="larger-src"),
        Sample((Arg(mk((3, 4))), -1, _gather_index(rng, (2, 6), 4), Arg(mk((2, 6))))),
        Sample((Arg(mk((4, 3)), "transposed"), 0, _gather_index(rng, (3, 3), 3),
                Arg(mk((3, 3)), "strided"))),
    ]


def _torch_scatter_add(t: Any) -> Callable[..., Any]:
    """``torch.scatter_add`` with ``src`` cropped to the index's shape first: PyTorch uses only
    that part too, but its backward cannot return a gradient for a larger ``src``."""

    def call(x: Any, dim: int, index: Any, src: Any) -> Any:
        return t.scatter_add(x, dim, index, src[tuple(slice(0, n) for n in index.shape)])

    return call


def _scatter_add_errors(rng: np.random.Generator) -> list[ErrorCase]:
    f64 = np.dtype(np.float64)
    x, src = Arg(nonzero((3, 4), f64, rng)), Arg(nonzero((1, 2), f64, rng))
    return [ErrorCase((x, 0, _idx([[3, 0]]), src), IndexOutOfRangeError, "scatter_add.*3"),
            ErrorCase((x, 0, _idx([[-1, 0]]), src), IndexOutOfRangeError,
                      "scatter_add: index -1.*size 3"),
            ErrorCase((x, 0, Arg(np.zeros((1, 2))), src), DTypeError, "scatter_add.*integer")]


def _index_select_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [
        Sample((Arg(mk((4, 3))), 0, _idx([0, 2, 2])), label="repeated"),
        Sample((Arg(mk((4, 3))), 1, _idx([2, 0]))),
        Sample((Arg(mk((2, 3, 2))), -1, _idx([1, 1, 0, 1]))),
        Sample((Arg(mk((4, 3))), 0, _idx([], _I64)), label="empty"),
        Sample((Arg(mk((3, 4)), "transposed"), 1, _idx([0, 2]))),
    ]


def _index_select_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((4, 3), np.dtype(np.float64), rng))
    return [ErrorCase((x, 0, _idx([[0, 1]])), ShapeError, r"index_select.*1-D.*\(1, 2\)"),
            ErrorCase((x, 0, _idx([0, 4])), IndexOutOfRangeError, "take.*4"),
            ErrorCase((x, 0, Arg(np.zeros(2))), DTypeError, "index_select.*integer.*float64")]


def _masked_fill_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    mask = lambda shape: Arg(values(shape, _BOOL, rng))  # noqa: E731
    fill = mk(()).item()
    out = [
        Sample((Arg(mk((2, 3))), mask((2, 3)), fill)),
        Sample((Arg(mk((2, 3))), mask((3,)), fill), label="broadcast-mask"),
        Sample((Arg(mk((2, 3))), mask((2, 3)), Arg(mk(()))), label="tensor-value"),
        Sample((Arg(mk((3, 4)), "transposed"), mask((3, 4)), fill)),
        Sample((Arg(mk(())), mask(()), fill)),
    ]
    if dtype.kind == "f" or dtype.name == "bfloat16":
        out.append(Sample((Arg(mk((2, 3))), mask((2, 3)), float("-inf")), label="minus-inf",
                          gradcheck=False))
        out.append(Sample((Arg(mk((2, 3))), mask((2, 3)), Arg(exact(0.25, np.dtype(np.float64)))),
                          label="wider-value", gradcheck=False))
    return out


def _masked_fill_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((2, 3), np.dtype(np.float64), rng))
    return [ErrorCase((x, _idx([[1, 0, 1]]), 0.0), DTypeError, "masked_fill.*bool.*int64")]


def _one_hot_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    ints = lambda shape: Arg(values(shape, dtype, rng, 0, 4))  # noqa: E731
    return [Sample((ints((4,)), 5)), Sample((ints((2, 3)), 5)), Sample((ints(()), 5)),
            Sample((_idx([0, 2, 2], dtype),)), Sample((ints((0,)), 3))]


def _one_hot_errors(rng: np.random.Generator) -> list[ErrorCase]:
    return [
        ErrorCase((Arg(np.zeros(3)), 4), DTypeError, "one_hot.*integer.*float64"),
        ErrorCase((_idx([0, 4]), 4), IndexOutOfRangeError, "one_hot.*4.*4 classes"),
        ErrorCase((_idx([-1, 2]), 4), IndexOutOfRangeError, "one_hot.*-1"),
    ]


RECORDS = [
    OpRecord(name="getitem", fn=pb.getitem, torch=_torch_getitem, ops=("getitem",), dtypes=ALL,
             samples=_basic_samples, errors=_getitem_errors,
             note="Basic indexing: ints, slices, None, Ellipsis (a view)."),
    OpRecord(name="getitem[advanced]", fn=pb.getitem, torch=_torch_getitem, ops=("index",),
             dtypes=ALL, samples=_advanced_samples,
             note="Integer-array (repeated, negative, 2-D, lists) and boolean-mask indexing."),
    OpRecord(name="gather", fn=pb.gather, torch=lambda t: t.gather, ops=("gather", "getitem"),
             dtypes=ALL, samples=_gather_samples, errors=_gather_errors),
    OpRecord(name="take_along_axis", fn=pb.take_along_axis, torch=lambda t: t.take_along_dim,
             ops=("gather",), dtypes=ALL, samples=_take_along_samples,
             errors=_take_along_errors),
    OpRecord(name="scatter_add", fn=pb.scatter_add, torch=_torch_scatter_add,
             ops=("scatter_add", "getitem"), dtypes=FLOATS + INTS, samples=_scatter_add_samples,
             errors=_scatter_add_errors),
    OpRecord(name="index_select", fn=pb.index_select, torch=lambda t: t.index_select,
             ops=("take",), dtypes=ALL, samples=_index_select_samples,
             errors=_index_select_errors),
    OpRecord(name="masked_fill", fn=pb.masked_fill, torch=lambda t: t.masked_fill,
             ops=("where",), dtypes=ALL, samples=_masked_fill_samples,
             errors=_masked_fill_errors,
             note="The result keeps x's dtype whatever the value's, as in PyTorch."),
    OpRecord(name="one_hot", fn=pb.one_hot,
             torch=lambda t: lambda i, num_classes=-1: t.nn.functional.one_hot(i.long(), num_classes),
             ops=("one_hot",), dtypes=INTS, samples=_one_hot_samples, errors=_one_hot_errors,
             differentiable=False),
]
