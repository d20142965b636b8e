"""The CPU backend's threaded kernels give NumPy's results."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import _cpu_parallel as par


@pytest.fixture
def two_threads():
    before = par.get_num_threads()
    par.set_num_threads(2)
    yield
    par.set_num_threads(before)


@pytest.mark.parametrize(
    "xs, ys",
    [((300, 200), (200, 150)), ((300, 200), (200,)), ((200,), (200, 300)),
     ((8, 64, 128), (128, 96)), ((4, 6, 64, 32), (4, 6, 32, 64)), ((1, 6, 64, 32), (4, 6, 32, 64)),
     ((4, 1, 64, 32), (6, 32, 64)), ((3, 5), (5, 4))],
    ids=str,
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_parallel_matmul_matches_numpy(two_threads, xs, ys, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(dtype)
    y = rng.standard_normal(ys).astype(dtype)
    expected = np.matmul(x, y)
    got = par.parallel_matmul(x, y)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    # Different blockings sum in a different order: float32 needs an absolute tolerance too.
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, expected, **tol)


def test_parallel_matmul_on_views_and_integers(two_threads):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 256, 96)).astype(np.float32)[:, ::2, :].swapaxes(1, 2)
    y = rng.standard_normal((64, 128, 40)).astype(np.float32)
    np.testing.assert_allclose(par.parallel_matmul(x, y), np.matmul(x, y), rtol=1e-5, atol=1e-4)
    i = rng.integers(0, 5, (400, 300))
    np.testing.assert_array_equal(par.parallel_matmul(i, i.T), i @ i.T)


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
