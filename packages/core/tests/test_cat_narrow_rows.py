"""cat of many narrow rows (cat([x, y], 1) of two 65,536 x 2 matrices: a relation's MLP input),
which the CPU kernel copies one row chunk at a time as an opaque item: bitwise NumPy's
concatenate for every plain dtype, shape and layout, and gradients against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback._ops import shape as shape_ops

CASES = [  # (shapes, axis): narrow chunks, a zero-width input, 3-d, a wide input, few rows
    ([(4096, 2), (4096, 2)], 1), ([(2048, 3), (2048, 1), (2048, 0)], 1),
    ([(1024, 2, 3), (1024, 5, 3)], 1), ([(1024, 2, 2), (1024, 2, 1)], -1),
    ([(2048, 30), (2048, 2)], 1), ([(8, 2), (8, 3)], 1), ([(4, 512, 2), (4, 256, 2)], 1),
]


@pytest.mark.parametrize("shapes,axis", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.int64, np.bool_,
                                   np.complex64])
def test_cat_is_bitwise_numpys_concatenate(shapes, axis, dtype):
    rng = np.random.default_rng(len(shapes))
    xs = [(rng.standard_normal(s) * 100).astype(dtype) for s in shapes]
    if dtype == np.float32:
        xs[0].reshape(-1)[:3] = [np.nan, -0.0, np.inf]
    want = np.concatenate(xs, axis)
    got = pb.cat([pb.tensor(x) for x in xs], axis).numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    if dtype == np.float32:
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    kernel = pb.get_op("cat").generic(np)  # as a grad rule calls it, negative axis included
    np.testing.assert_array_equal(kernel(*xs, axis=axis - len(shapes[0]) if axis > 0 else axis),
                                  want)


def test_only_contiguous_narrow_rows_take_the_item_copy():
    x = np.zeros((4096, 2), np.float32)
    assert shape_ops._narrow_rows((x, x), 1)
    assert not shape_ops._narrow_rows((x, np.zeros((4096, 4), np.float32)[:, ::2]), 1)
    assert not shape_ops._narrow_rows((x, x.astype(np.float64)), 1)
    assert not shape_ops._narrow_rows((x[:1000], x[:1000]), 1)  # few rows
    assert not shape_ops._narrow_rows((x, np.zeros((4096, 17), np.float32)), 1)  # a wide chunk
    assert not shape_ops._narrow_rows((x.astype(object), x.astype(object)), 1)
    strided = np.zeros((4096, 4), np.float32)[:, ::2]
    np.testing.assert_array_equal(pb.cat([pb.tensor(strided), pb.tensor(x)], 1).numpy(),
                                  np.concatenate([strided, x], 1))


def test_cat_gradients_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4096, 2)), rng.standard_normal((4096, 3))
    g = rng.standard_normal((4096, 5))
    x, y = pb.tensor(a, requires_grad=True), pb.tensor(b, requires_grad=True)
    pb.cat([x, y], 1).backward(pb.tensor(g))
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.cat([tx, ty], 1).backward(torch.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())
