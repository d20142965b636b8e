"""A matrix with one column times one with one row (an outer product: the input gradient of a
one-output Linear layer), which the CPU kernel hands to ``dot``: values and gradients against
PyTorch, special values against NumPy's matmul."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 5), (4096, 16), (65536, 1)])
def test_outer_product_and_gradients_match_torch(dtype, rows, cols) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(rows + cols)
    a = rng.standard_normal((rows, 1)).astype(dtype)
    b = rng.standard_normal((1, cols)).astype(dtype)
    g = rng.standard_normal((rows, cols)).astype(dtype)
    x, y = pb.tensor(a, requires_grad=True), pb.tensor(b, requires_grad=True)
    out = pb.matmul(x, y)
    out.backward(pb.tensor(g))
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.tensor(b, requires_grad=True)
    tout = tx @ ty
    tout.backward(torch.tensor(g))
    # one product per entry: exact in either library
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    # the gradients are sums over rows or columns, added in each library's own order
    tol = (1e-6 if dtype == np.float32 else 1e-14) * np.sqrt(rows * cols) * 10
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=tol, atol=tol)


def test_outer_product_special_values_and_layouts_match_numpy() -> None:
    a = np.array([[np.nan], [np.inf], [-np.inf], [0.0], [-0.0], [1e38], [2.0]], np.float32)
    b = np.array([[0.0, -1.0, np.inf, 3e38]], np.float32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(pb.matmul(pb.tensor(a), pb.tensor(b)).numpy(), a @ b)
        strided = np.ascontiguousarray(np.repeat(a, 2, axis=1))[:, :1]  # a column view
        np.testing.assert_array_equal(pb.matmul(pb.tensor(strided), pb.tensor(b)).numpy(),
                                      strided @ b)
    ints = np.arange(6).reshape(6, 1)
    out = pb.matmul(pb.tensor(ints), pb.tensor(np.array([[2, -3]])))
    assert out.dtype == pb.int64
    np.testing.assert_array_equal(out.numpy(), ints @ np.array([[2, -3]]))
