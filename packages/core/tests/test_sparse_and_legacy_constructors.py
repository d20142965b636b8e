"""PyTorch's sparse COO calls (computed densely) and legacy/``size=`` constructors, against
torch: the values, dtypes and shapes ported graph programs rely on."""

from __future__ import annotations

import numpy as np
import pytest

import pullback

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("indices,values,size", [
    ([[0, 1, 1], [2, 0, 0]], [3.0, 4.0, 5.0], (2, 3)),        # a duplicate coordinate: summed
    ([[0, 2], [1, 1]], [1.0, 2.0], None),                     # size inferred
    ([[1, 0]], [[1.0, 2.0], [3.0, 4.0]], (3, 2)),              # hybrid: dense values per entry
    ([[0, 1, 2], [0, 1, 2], [1, 0, 1]], [1, 2, 3], (3, 3, 2)),  # 3 sparse dims, ints
])
def test_sparse_coo_tensor_is_torchs_dense_tensor(indices, values, size) -> None:
    ours = pullback.sparse_coo_tensor(indices, values, size)
    sized = () if size is None else (size,)
    theirs = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor(values), *sized,
                                     check_invariants=True).to_dense()
    assert ours.shape == tuple(theirs.shape) and str(ours.dtype) == str(theirs.dtype)[6:]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_dtype_and_the_int_adjacency_of_the_gcn_example() -> None:
    edges = np.array([[0, 1], [1, 2], [2, 0]]).T
    ours = pullback.eye(3) + pullback.sparse_coo_tensor(edges, pullback.ones(3), (3, 3),
                                                         dtype=pullback.int64)
    theirs = torch.eye(3) + torch.sparse_coo_tensor(edges, torch.ones(3), (3, 3),
                                                    dtype=torch.int64)
    assert ours.dtype == pullback.float32 and theirs.dtype == torch.float32
    np.testing.assert_array_equal(ours.numpy(), theirs.to_dense().numpy())


def test_spmm_and_to_sparse_give_torchs_values_and_gradients() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 3)) * (rng.random((4, 3)) > 0.5), rng.standard_normal((3, 2))
    ta = pullback.tensor(a, requires_grad=True)
    tb = pullback.tensor(b, requires_grad=True)
    out = pullback.spmm(ta.to_sparse(), tb)
    ra = torch.tensor(a, requires_grad=True)
    rb = torch.tensor(b, requires_grad=True)
    ref = torch.spmm(ra.to_sparse(), rb)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(tb.grad.numpy(), rb.grad.numpy(), rtol=1e-12)
    assert ta.grad is not None  # torch's sparse gradient has the dense one's values where set
    np.testing.assert_allclose(ta.grad.numpy()[a != 0],
                               ra.grad.to_dense().numpy()[a != 0], rtol=1e-12)
    assert ta.to_dense() is ta and not ta.to_sparse().is_sparse


def test_bad_indices_are_a_shape_error() -> None:
    with pytest.raises(pullback.ShapeError, match="indices of shape"):
        pullback.sparse_coo_tensor([[0, 1]], [1.0], (2,))


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "rand", "randn"])
def test_creation_takes_size_as_a_keyword(name: str) -> None:
    ours = getattr(pullback, name)(size=(2, 3))
    assert ours.shape == tuple(getattr(torch, name)(size=(2, 3)).shape) == (2, 3)
    for lib in (pullback, torch):
        with pytest.raises(TypeError):
            getattr(lib, name)(2, size=(2, 3))
