"""The CPU backend's threaded elementwise kernels give NumPy's results."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import _cpu_parallel as par
from pullback import _gemm


@pytest.fixture
def two_threads():
    before = par.get_num_threads()
    par.set_num_threads(2)
    yield
    par.set_num_threads(before)


@pytest.mark.parametrize("shape", [(1024, 300), (5, 100_000), (300_000,), (2, 1, 70_000)], ids=str)
def test_parallel_elementwise_matches_numpy(two_threads, shape):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape[-1:]).astype(np.float32)
    x, y = pb.tensor(a), pb.tensor(b)
    np.testing.assert_allclose((x * y + x).tanh().numpy(), np.tanh(a * b + a), rtol=1e-6)
    np.testing.assert_allclose(pb.sigmoid(x).numpy(), 1 / (1 + np.exp(-a)), rtol=1e-5)


def test_set_num_threads_validates():
    with pytest.raises(ValueError, match="positive"):
        par.set_num_threads(0)


@pytest.fixture(params=[2, 3], ids=["2-threads", "3-threads"])
def threads(request):
    before = par.get_num_threads()
    par.set_num_threads(request.param)
    yield request.param
    par.set_num_threads(before)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 2), False),
                                           (-1, False), ((1, 2), True)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_split_sum_matches_numpy(threads, axis, keepdims, dtype):
    a = np.random.default_rng(3).standard_normal((301, 70, 9)).astype(dtype)
    got = pb.tensor(a).sum(axis=axis, keepdims=keepdims).numpy()
    want = a.astype(np.float64).sum(axis=axis, keepdims=keepdims)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-3)


@pytest.mark.parametrize("rows", [2, 2048])
def test_row_split_gradient_of_broadcasting_matches_numpy(threads, rows):
    """sum_to reduces the broadcast operands' gradients: over rows (r) and within rows (c)."""
    rng = np.random.default_rng(4)
    cols = (1 << 18) // rows
    x0, r0, c0 = (rng.standard_normal(s) for s in ((rows, cols), (1, cols), (rows, 1)))
    x, r, c = (pb.tensor(v, requires_grad=True) for v in (x0, r0, c0))
    (x * r * c).sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), (x0 * c0).sum(axis=0, keepdims=True), rtol=1e-10)
    np.testing.assert_allclose(c.grad.numpy(), (x0 * r0).sum(axis=1, keepdims=True), rtol=1e-10)
    lead = pb.tensor(rng.standard_normal(cols), requires_grad=True)
    (x * lead).sum().backward()  # a leading broadcast axis is summed away
    np.testing.assert_allclose(lead.grad.numpy(), x0.sum(axis=0), rtol=1e-10)


@pytest.mark.parametrize("shapes", [
    ((32, 4, 64, 32), (32, 4, 32, 64)),  # attention's scores: split
    ((64, 8, 16, 40), (64, 8, 40, 24)),
    ((3, 64, 64), (3, 64, 64)),  # too little work: one thread
    ((1, 4, 64, 32), (5, 4, 32, 64)),  # broadcast stacks: NumPy's own loop
], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_stacks_of_small_products_split_over_threads_give_the_same_bits(two_threads, shapes,
                                                                       dtype):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shapes[0]).astype(dtype)
    b = np.swapaxes(rng.standard_normal(shapes[1][:-2] + shapes[1][:-3:-1]).astype(dtype), -1, -2)
    got = pb.matmul(pb.tensor(a), pb.tensor(b)).numpy()  # b is a strided view, as k^T is
    pb.set_num_threads(1)
    np.testing.assert_array_equal(got, pb.matmul(pb.tensor(a), pb.tensor(b)).numpy())
    assert got.dtype == np.dtype(dtype)
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=tol, atol=tol * np.abs(got).max())
    if _gemm.provider() == "numpy":  # each product is one BLAS call either way
        np.testing.assert_array_equal(got, np.matmul(a, b))
