"""The CPU backend's threaded elementwise kernels give NumPy's results."""

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
