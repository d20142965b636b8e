"""Records of the shape functions under PyTorch's names (:mod:`pullback._ops.shape_extra`)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import pullback as pb

from ...errors import ArgumentError, ShapeError
from ._inputs import maker, values
from ._record import Arg, ErrorCase, OpRecord, Sample

_F64 = np.dtype(np.float64)


def _cases(cases: Sequence[tuple[Sequence[tuple[int, ...]], tuple[Any, ...], dict[str, Any]]]):
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mk = maker(values, dtype, rng)
        out = [Sample(tuple(Arg(mk(s)) for s in shapes) + tuple(rest), dict(kw))
               for shapes, rest, kw in cases]
        first_shapes, first_rest, first_kw = cases[0]
        if len(first_shapes[0]) >= 2:
            out.append(Sample((Arg(mk(first_shapes[0]), "transposed"),) + tuple(first_rest),
                              dict(first_kw)))
        return out

    return samples


def _record(name: str, cases: Any, ops: Sequence[str], errors: Any = None,
            fn: Any = None, torch: Any = None) -> OpRecord:
    return OpRecord(name=name, fn=fn or getattr(pb, name),
                    torch=torch or (lambda t: getattr(t, name)), ops=tuple(ops),
                    dtypes=("float32", "float64", "int64"), samples=_cases(cases),
                    **({"errors": errors} if errors else {}))


def _error(shapes: Sequence[tuple[int, ...]], rest: tuple[Any, ...], error: type, match: str):
    return lambda rng: [ErrorCase(tuple(Arg(values(s, _F64, rng)) for s in shapes) + rest, error,
                                  match)]


RECORDS = [
    _record("narrow", [([(3, 4)], (1, 1, 2), {}), ([(3, 4)], (0, -2, 2), {}),
                       ([(2, 3, 4)], (-1, 0, 0), {})], ("getitem",),
            errors=_error([(3, 4)], (1, 3, 2), ArgumentError, "narrow: start 3 and length 2")),
    _record("movedim", [([(2, 3, 4)], (0, 2), {}), ([(2, 3, 4)], ((0, 1), (2, 0)), {}),
                        ([(3, 4)], (-1, 0), {})], ("permute",)),
    _record("unflatten", [([(2, 12)], (1, (3, 4)), {}), ([(6, 2)], (0, (-1, 3)), {})],
            ("reshape",)),
    *[_record(name, [([(3,)], (), {}), ([()], (), {}), ([(2, 3)], (), {}),
                     ([(2, 3, 4)], (), {})], ("reshape",)) for name in
      ("atleast_1d", "atleast_2d", "atleast_3d")],
    _record("broadcast_tensors", [([(2, 1), (3,)], (), {}), ([(2, 3), (2, 3), ()], (), {})],
            ("broadcast_to",),
            errors=_error([(2, 3), (4,)], (), ShapeError, r"broadcast_tensors.*\(2, 3\)")),
    _record("rot90", [([(2, 3)], (), {}), ([(2, 3)], (2,), {}), ([(2, 3, 4)], (3, (1, 2)), {}),
                      ([(2, 3)], (-1,), {})], ("flip",)),
    _record("tensor_split", [([(7, 2)], (3,), {}), ([(3, 7)], ((1, 5),), {"dim": 1}),
                             ([(4,)], ((1, 9),), {})], ("getitem",)),
    _record("hsplit", [([(2, 6)], (3,), {}), ([(6,)], ((2, 3),), {})], ("getitem",),
            errors=_error([(2, 5)], (3,), ShapeError, "hsplit: dimension 1 of size 5")),
    _record("vsplit", [([(4, 3)], (2,), {}), ([(4, 3)], ((1,),), {})], ("getitem",)),
    _record("diagonal", [([(3, 4)], (), {}), ([(3, 4)], (1,), {}), ([(3, 4)], (-2,), {}),
                         ([(2, 3, 4)], (0, 1, 2), {}), ([(4, 3)], (5,), {})], ("index",)),
    _record("diag", [([(3,)], (), {}), ([(3,)], (1,), {}), ([(3,)], (-2,), {}),
                     ([(3, 4)], (), {}), ([(3, 4)], (-1,), {})], ("mul", "index")),
    _record("repeat_interleave", [([(3,)], (2,), {}), ([(2, 3)], (2,), {"dim": 1}),
                                  ([(2, 3)], (Arg(np.array([1, 0, 2])),), {"dim": 1}),
                                  ([(2, 2)], (3,), {})], ("take",)),
    _record("diag_embed", [([(2, 3)], (), {}), ([(3,)], (1,), {}), ([(2, 3)], (-1, 0, 2), {})],
            ("mul", "permute")),
    _record("meshgrid", [([(3,), (2,)], (), {"indexing": "ij"}),
                         ([(3,), (2,), (4,)], (), {"indexing": "xy"}),
                         ([(3,), ()], (), {"indexing": "ij"})], ("broadcast_to",)),
    _record("block_diag", [([(2, 3), (1, 2)], (), {}), ([(), (3,), (2, 2)], (), {})],
            ("pad", "cat")),
    _record("cartesian_prod", [([(3,), (2,)], (), {}), ([(2,), (2,), (3,)], (), {})],
            ("stack",)),
    _record("Tensor.unfold", [([(7,)], (0, 3, 2), {}), ([(2, 6)], (1, 2, 2), {}),
                              ([(5, 3)], (0, 5, 1), {}), ([(2, 3, 4)], (-1, 2, 1), {})],
            ("index",), fn=lambda x, *a: x.unfold(*a),
            torch=lambda t: lambda x, *a: x.unfold(*a),
            errors=_error([(3, 4)], (1, 5, 1), ArgumentError, "unfold: size 5")),
]
