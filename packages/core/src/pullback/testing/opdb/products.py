"""Records of the products under PyTorch's names (:mod:`pullback._ops.products`): mm, bmm,
mv, addmm, addmv, baddbmm, addcmul, addcdiv, kron, tensordot, inner, cross."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import pullback as pb

from ...errors import ShapeError
from ._inputs import FLOATS, INTS, maker, nonzero
from ._record import Arg, ErrorCase, OpRecord, Sample

Shapes = Sequence[tuple[int, ...]]
_F64 = np.dtype(np.float64)


def _shaped(cases: Sequence[tuple[Shapes, dict[str, Any]]], strided: Shapes | None = None,
            ) -> Callable[[np.dtype, np.random.Generator], list[Sample]]:
    """Samples from a list of (operand shapes, keywords), plus one non-contiguous case."""

    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mk = maker(nonzero, dtype, rng, low=0.25, high=1.5)
        out = [Sample(tuple(Arg(mk(s)) for s in shapes), dict(kw)) for shapes, kw in cases]
        if strided:
            first, *rest = strided
            out.append(Sample((Arg(mk(first), "transposed"),
                               *(Arg(mk(s), "strided") for s in rest))))
        return out

    return samples


def _rank_error(name: str, shapes: Shapes, match: str) -> Callable[..., list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        mk = maker(nonzero, _F64, rng)
        return [ErrorCase(tuple(Arg(mk(s)) for s in shapes), ShapeError, f"{name}.*{match}")]

    return errors


def _record(name: str, cases: Sequence[tuple[Shapes, dict[str, Any]]], ops: Sequence[str], *,
            strided: Shapes | None = None, errors: Callable[..., list[ErrorCase]] | None = None,
            dtypes: Sequence[str] = ("float32", "float64"), torch: Any = None) -> OpRecord:
    optional: dict[str, Any] = {"errors": errors} if errors else {}
    return OpRecord(name=name, fn=getattr(pb, name),
                    torch=torch or (lambda t: getattr(t, name)), ops=tuple(ops),
                    dtypes=tuple(dtypes), samples=_shaped(cases, strided),
                    **optional)


_NONE: dict[str, Any] = {}
_SCALED = {"beta": 0.5, "alpha": 2.0}

RECORDS = [
    _record("mm", [(((2, 3), (3, 4)), _NONE), (((0, 3), (3, 2)), _NONE),
                   (((1, 1), (1, 1)), _NONE)], ("matmul",), strided=((3, 3), (3, 4)),
            dtypes=FLOATS + INTS,
            errors=_rank_error("mm", ((2, 2, 3), (3, 4)), r"2-D.*\(2, 2, 3\)")),
    _record("bmm", [(((2, 2, 3), (2, 3, 4)), _NONE), (((1, 0, 3), (1, 3, 2)), _NONE)],
            ("matmul",), strided=((2, 3, 3), (2, 3, 4)),
            errors=_rank_error("bmm", ((2, 2, 3), (3, 2, 4)), r"batch.*\(2, 2, 3\)")),
    _record("mv", [(((2, 3), (3,)), _NONE), (((0, 3), (3,)), _NONE)], ("matmul",),
            strided=((3, 3), (3,)), errors=_rank_error("mv", ((2, 3), (3, 1)), "2-D and 1-D")),
    _record("addmm", [(((2, 4), (2, 3), (3, 4)), _NONE), (((4,), (2, 3), (3, 4)), _SCALED),
                      (((1, 1), (2, 3), (3, 4)), {"beta": 0.0})], ("matmul", "add", "mul"),
            strided=((2, 2), (2, 3), (3, 2))),
    _record("addmv", [(((2,), (2, 3), (3,)), _NONE), (((1,), (2, 3), (3,)), _SCALED)],
            ("matmul", "add", "mul")),
    _record("baddbmm", [(((2, 2, 4), (2, 2, 3), (2, 3, 4)), _NONE),
                        (((2, 4), (2, 2, 3), (2, 3, 4)), _SCALED)], ("matmul", "add", "mul")),
    _record("addcmul", [(((2, 3), (2, 3), (3,)), _NONE), (((3,), (2, 1), (1, 3)),
                                                          {"value": -0.5}), (((), (), ()), _NONE)],
            ("mul", "add"), strided=((3, 4), (3, 4), (3, 4))),
    _record("addcdiv", [(((2, 3), (2, 3), (3,)), _NONE), (((3,), (2, 1), (1, 3)),
                                                          {"value": -0.5})],
            ("div", "add", "mul"), strided=((3, 4), (3, 4), (3, 4))),
    _record("kron", [(((2, 3), (3, 2)), _NONE), (((3,), (2,)), _NONE),
                     (((2, 2), (3,)), _NONE), (((2, 1, 2), (2, 3)), _NONE)], ("reshape", "mul"),
            dtypes=("float32", "float64", "int64")),
    _record("tensordot", [(((2, 3, 4), (3, 4, 2)), _NONE), (((2, 3), (3, 4)), {"dims": 1}),
                          (((2, 3), (4,)), {"dims": 0}),
                          (((2, 3, 4), (4, 2, 3)), {"dims": ([1, 2], [2, 0])}),
                          (((3, 4), (4, 3)), {"dims": ([0], [1])})],
            ("permute", "reshape", "matmul"), strided=((3, 3), (3, 3)),
            errors=_rank_error("tensordot", ((2, 3), (4, 5)), r"axis 0 of \(2, 3\)")),
    _record("inner", [(((2, 3), (4, 3)), _NONE), (((3,), (3,)), _NONE), (((), (2, 3)), _NONE),
                      (((2, 2, 3), (3,)), _NONE)], ("matmul", "reshape"),
            strided=((3, 3), (2, 3))),
    _record("cross", [(((4, 3), (4, 3)), {"dim": 1}), (((3, 2), (3, 2)), _NONE),
                      (((2, 3), (1, 3)), {"dim": -1}), (((3,), (3,)), _NONE)],
            ("getitem", "mul", "sub", "stack"), strided=((3, 3), (3, 3)),
            dtypes=("float32", "float64", "int64"),
            errors=_rank_error("cross", ((2, 4), (2, 4)), "size 3")),
]
