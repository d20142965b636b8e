"""``F.layer_norm`` of a constant row is exactly 0, as in PyTorch (issue 39): the float mean
of a constant row is off by its rounding, which 1/sqrt(eps) blew up to 0.0048; the NumPy kernel
(small rows, other dtypes) and the native one (float32 from 1,024 elements) correct it."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("cols", [48, 4096])  # the NumPy kernel, the native one
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("value", [0.1, -7.77, 1000.3, 3.0e5, 1.0e-3])
def test_a_constant_row_normalizes_to_exactly_zero(cols, dtype, value):
    x = np.full((5, cols), value, dtype=dtype)
    w = np.linspace(0.5, 2.0, cols).astype(dtype)
    b = np.linspace(-1.0, 1.0, cols).astype(dtype)
    ours = F.layer_norm(pb.tensor(x), (cols,)).numpy()
    theirs = torch.nn.functional.layer_norm(torch.tensor(x), (cols,)).numpy()
    np.testing.assert_array_equal(theirs, 0)
    np.testing.assert_array_equal(ours, theirs)
    affine = F.layer_norm(pb.tensor(x), (cols,), pb.tensor(w), pb.tensor(b)).numpy()
    np.testing.assert_array_equal(affine, np.broadcast_to(b, x.shape))


@pytest.mark.parametrize("cols", [48, 4096])
def test_rows_still_agree_with_pytorch_and_so_do_gradients(cols):
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((6, cols)) * 3 + 50).astype(np.float32)
    x[2] = 17.25  # a constant row among others
    g = rng.standard_normal(x.shape).astype(np.float32)
    ours = pb.tensor(x, requires_grad=True)
    y = F.layer_norm(ours, (cols,))
    y.backward(pb.tensor(g))
    theirs = torch.tensor(x, requires_grad=True)
    ty = torch.nn.functional.layer_norm(theirs, (cols,))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), atol=2e-5)
    np.testing.assert_array_equal(y.detach().numpy()[2], 0)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-3, atol=1e-3)
