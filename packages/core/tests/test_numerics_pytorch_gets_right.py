"""Numerics that PyTorch gets right (issue 39), each against PyTorch: zero-size matrix
products have gradients (``(2, 3, 0) @ (0,)`` raised NumPy's reshape error in backward), and a
float32 cumsum accumulates in double as PyTorch's CPU kernel does (1,025 values were 1.5e-5 from
the exact sums where PyTorch is at 1.8e-6). ``F.layer_norm`` of a constant row: pullback-nn's
test_layer_norm_constant_rows."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("a_shape, b_shape", [
    ((2, 3, 0), (0,)), ((0,), (0,)), ((0,), (0, 4)), ((2, 0), (0, 3)), ((3, 0, 4), (4, 5)),
    ((0, 4), (4,)), ((2, 3, 0), (0, 5)), ((4, 0, 2, 3), (3, 2)), ((2, 1, 3, 0), (4, 0, 6)),
])
def test_zero_size_products_and_their_gradients_match_pytorch(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal(a_shape).astype(np.float32)
    b_np = rng.standard_normal(b_shape).astype(np.float32)
    a, b = pb.tensor(a_np, requires_grad=True), pb.tensor(b_np, requires_grad=True)
    ta, tb = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    out, tout = a @ b, ta @ tb
    assert tuple(out.shape) == tuple(tout.shape)
    g = rng.standard_normal(tuple(tout.shape)).astype(np.float32)
    out.backward(pb.tensor(g))
    tout.backward(torch.tensor(g))
    for ours, theirs in ((a, ta), (b, tb)):
        assert ours.grad.shape == tuple(theirs.grad.shape)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("n", [1025, 100_000])
def test_float32_cumsum_is_as_accurate_as_pytorchs(n):
    x = np.random.default_rng(n).random(n).astype(np.float32)
    exact = np.cumsum(x.astype(np.float64))
    ours = pb.cumsum(pb.tensor(x), 0).numpy()
    theirs = torch.cumsum(torch.tensor(x), 0).numpy()
    assert ours.dtype == np.float32
    # double accumulation: each sum is the exact one rounded once to float32
    np.testing.assert_array_equal(ours, exact.astype(np.float32))
    assert np.abs(ours - exact).max() <= np.abs(theirs - exact).max()


@pytest.mark.parametrize("axis", [0, 1])
def test_float32_cumsum_along_either_axis_and_its_gradient(axis):
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal((300, 40)) * 10).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    ours = pb.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y, ty = pb.cumsum(ours, axis), torch.cumsum(theirs, axis)
    exact = np.cumsum(x.astype(np.float64), axis=axis)
    np.testing.assert_array_equal(y.detach().numpy(), exact.astype(np.float32))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6, atol=2e-5)
    y.backward(pb.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=2e-5)


def test_other_dtypes_give_pytorchs_dtypes():
    for dtype in ("int32", "int64", "float64"):
        ours = pb.cumsum(pb.arange(5, dtype=getattr(pb, dtype)), 0)
        theirs = torch.cumsum(torch.arange(5, dtype=getattr(torch, dtype)), 0)
        assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    half = pb.cumsum(pb.full((1000,), 0.1, dtype=pb.float16), 0)
    assert half.dtype == pb.float16 and abs(float(half[-1]) - 100.0) < 0.1
