"""Linear-algebra records: matmul and ``@`` (batching, broadcasting, 1-D operands), dot, outer,
einsum (ellipsis, diagonals, letters summed inside one operand)."""

from __future__ import annotations

import operator
from typing import Callable, Sequence

import numpy as np

import pullback as pb

from ...errors import ShapeError
from ._inputs import FLOATS, INTS, maker, nonzero
from ._record import Arg, ErrorCase, OpRecord, Sample

Shapes = Sequence[tuple[int, ...]]

_MATMUL_SHAPES: Sequence[Shapes] = (
    ((2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4)), ((2, 1, 2, 3), (3, 3, 2)), ((3,), (3,)),
    ((3,), (3, 4)), ((2, 3), (3,)), ((2, 2, 3), (3,)), ((3,), (2, 3, 4)), ((0, 3), (3, 2)),
    ((2, 0), (0, 3)), ((1, 3), (3, 1)),
)


def _matmul_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng, low=0.25, high=1.5)
    out = [Sample((Arg(mk(a)), Arg(mk(b)))) for a, b in _MATMUL_SHAPES]
    out.append(Sample((Arg(mk((2, 3)), "transposed"), Arg(mk((3, 4)), "strided"))))
    return out


def _matmul_errors(rng: np.random.Generator) -> list[ErrorCase]:
    mk = maker(nonzero, np.dtype(np.float64), rng)
    return [ErrorCase((Arg(mk((2, 3))), Arg(mk((4, 5)))), ShapeError, r"matmul.*\(2, 3\).*\(4, 5\)"),
            ErrorCase((Arg(mk(())), Arg(mk((3,)))), ShapeError, r"matmul.*\(\).*\(3,\)")]


def _vector_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((3,))), Arg(mk((3,))))), Sample((Arg(mk((0,))), Arg(mk((0,))))),
            Sample((Arg(mk((1,))), Arg(mk((1,))))),
            Sample((Arg(mk((4,)), "strided"), Arg(mk((4,)))))]


def _outer_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((3,))), Arg(mk((4,))))), Sample((Arg(mk((0,))), Arg(mk((2,))))),
            Sample((Arg(mk((3,)), "strided"), Arg(mk((1,)))))]


def _vector_errors(name: str) -> Callable[[np.random.Generator], list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        mk = maker(nonzero, np.dtype(np.float64), rng)
        return [ErrorCase((Arg(mk((2, 3))), Arg(mk((3,)))), ShapeError,
                          rf"{name}.*1-D.*\(2, 3\)")]

    return errors


_EINSUM_CASES: Sequence[tuple[str, Shapes]] = (
    ("ij,jk->ik", ((2, 3), (3, 4))),
    ("ij,jk", ((2, 3), (3, 4))),                      # implicit output
    ("ii->i", ((3, 3),)),                             # diagonal
    ("ii->", ((3, 3),)),                              # trace
    ("bii->bi", ((2, 3, 3),)),
    ("iij->j", ((3, 3, 2),)),
    ("ij->", ((2, 3),)),
    ("ij->j", ((2, 3),)),
    ("ijk->kji", ((2, 3, 4),)),
    ("ij,ij->ij", ((2, 3), (2, 3))),
    ("ij,kl->ik", ((2, 3), (4, 5))),                  # j and l summed inside one operand
    ("i,j->ij", ((3,), (2,))),
    ("i,i->", ((3,), (3,))),
    ("ij,j->i", ((2, 3), (3,))),
    ("bij,bjk->bik", ((2, 2, 3), (2, 3, 2))),
    ("...ij,...jk->...ik", ((2, 2, 3), (3, 4))),      # ellipsis, broadcast batch
    ("...i,...i->...", ((2, 3), (1, 3))),
    ("ij,jk,kl->il", ((2, 3), (3, 2), (2, 2))),
)


def _einsum_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng, low=0.25, high=1.5)
    out = [Sample((eq, *(Arg(mk(s)) for s in shapes))) for eq, shapes in _EINSUM_CASES]
    out.append(Sample(("ij,jk->ik", Arg(mk((2, 3)), "transposed"), Arg(mk((3, 2)), "strided"))))
    return out


def _einsum_errors(rng: np.random.Generator) -> list[ErrorCase]:
    mk = maker(nonzero, np.dtype(np.float64), rng)
    return [
        ErrorCase(("ij,jk->ik", Arg(mk((2, 3))), Arg(mk((4, 5)))), ShapeError, "einsum"),
        ErrorCase(("ij->i", Arg(mk((2, 3, 4)))), ShapeError, "einsum.*'ij'.*3 dims"),
        ErrorCase(("ij,jk->ik", Arg(mk((2, 3)))), ShapeError, "einsum.*2 operands.*got 1"),
    ]


RECORDS = [
    OpRecord(name="matmul", fn=pb.matmul, torch=lambda t: t.matmul, ops=("matmul",),
             dtypes=FLOATS + INTS, samples=_matmul_samples, errors=_matmul_errors),
    OpRecord(name="Tensor.__matmul__", fn=operator.matmul, torch=lambda t: operator.matmul,
             ops=("matmul",), dtypes=("float32", "float64"), samples=_matmul_samples),
    OpRecord(name="dot", fn=pb.dot, torch=lambda t: t.dot, ops=("matmul",), dtypes=FLOATS + INTS,
             samples=_vector_samples, errors=_vector_errors("dot")),
    OpRecord(name="outer", fn=pb.outer, torch=lambda t: t.outer, ops=("reshape", "mul"),
             dtypes=FLOATS + INTS, samples=_outer_samples, errors=_vector_errors("outer")),
    OpRecord(name="einsum", fn=pb.einsum, torch=lambda t: t.einsum, ops=("einsum",),
             dtypes=FLOATS + ("int64",), samples=_einsum_samples, errors=_einsum_errors,
             note="int32 is left out: PyTorch promotes int32 einsums that only sum ('ii->') to "
             "int64 and contractions not; NumPy and pullback keep int32 throughout."),
]
