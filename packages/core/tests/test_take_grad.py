"""index_select's gradient (an embedding's) on the CPU: rows summed by sorting, against
``np.add.at`` and PyTorch, with repeated and negative indices."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.registry import OPS


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("idx_shape", [(7,), (32, 64), (0,)], ids=str)
def test_rows_are_summed_like_add_at(dtype, idx_shape):
    """Within rounding of the exact sums; in float16, where ``np.add.at``'s running sum in the
    dtype drifts, no further from them than it (the sorted sums run pairwise)."""
    rng = np.random.default_rng(0)
    idx = rng.integers(-5, 5, idx_shape)  # repeats, and -1 and 4 name the same row
    g = rng.standard_normal(idx_shape + (3, 4)).astype(dtype)
    exact = np.zeros((5, 3, 4))
    np.add.at(exact, (idx,), g.astype(np.float64))
    add_at = np.zeros((5, 3, 4), dtype=dtype)
    np.add.at(add_at, (idx,), g)
    got = OPS["take_scatter_add"].kernel_for("cpu")(g, idx, axis=0, shape=(5, 3, 4))
    assert got.dtype == np.dtype(dtype) and got.shape == (5, 3, 4)
    error = np.abs(got - exact).max(initial=0)
    assert error <= {"float64": 1e-12, "float32": 1e-5, "float16": 0.2}[dtype]
    if dtype == "float16":
        assert error <= np.abs(add_at - exact).max(initial=0)


def test_embedding_gradient_matches_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle")
    rng = np.random.default_rng(1)
    table = rng.standard_normal((65, 16))
    idx = rng.integers(0, 65, (32, 64))
    g = rng.standard_normal((32, 64, 16))
    ours = pb.tensor(table, requires_grad=True)
    pb.index_select(ours, 0, pb.tensor(idx.reshape(-1))).reshape(32, 64, 16).backward(pb.tensor(g))
    theirs = torch.tensor(table, requires_grad=True)
    theirs.index_select(0, torch.tensor(idx.reshape(-1))).reshape(32, 64, 16).backward(
        torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-12)
