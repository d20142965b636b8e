"""Products of operands that cannot be multiplied: one ShapeError naming the op and both shapes
(NumPy's own error names a gufunc signature and chains a second traceback)."""

from __future__ import annotations

import pytest

import pullback as pb

CASES = [
    (lambda a, b: a @ b, "matmul", (3, 4), (3, 4),
     "last dim (4) must equal the second's second-to-last dim (3)"),
    (pb.matmul, "matmul", (2, 3, 4), (5, 4, 6), "batch dims (2,) and (5,) do not broadcast"),
    (pb.matmul, "matmul", (3, 4), (3,), "must equal the vector's length (3)"),
    (pb.mm, "mm", (3, 4), (3, 4), "last dim (4)"),
    (pb.bmm, "bmm", (2, 3, 4), (2, 3, 4), "last dim (4)"),
    (pb.mv, "mv", (3, 4), (3,), "vector's length (3)"),
    (pb.dot, "dot", (4,), (3,), "vector's length (3)"),
]


@pytest.mark.parametrize("fn, name, a, b, why", CASES, ids=[f"{c[1]}-{c[2]}@{c[3]}" for c in CASES])
def test_a_product_of_mismatched_shapes_is_one_shape_error(fn, name, a, b, why) -> None:
    with pytest.raises(pb.ShapeError) as info:
        fn(pb.randn(*a), pb.randn(*b))
    message = str(info.value)
    assert message.startswith(f"{name}: shapes {a} and {b} cannot be multiplied")
    assert why in message and "gufunc" not in message
    assert info.value.__cause__ is None and info.value.__context__ is None


@pytest.mark.parametrize("a, b, out", [((2, 3, 4), (1, 4, 6), (2, 3, 6)), ((4,), (4,), ()),
                                       ((2, 3, 0), (0,), (2, 3)), ((5, 4), (4,), (5,))])
def test_products_that_fit_still_run(a, b, out) -> None:
    assert (pb.randn(*a) @ pb.randn(*b)).shape == out
