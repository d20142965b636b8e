"""Tensor.copy_ inside a graph is differentiable, as PyTorch's: the gradient reaches the source
(summed over broadcast axes) and the overwritten values get a zero gradient."""

import numpy as np
import pytest

import pullback as pb

torch = pytest.importorskip("torch")


def _grads(m, src_shape):
    rng = np.random.default_rng(0)
    x = m.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    s = m.tensor(rng.normal(size=src_shape), requires_grad=True)
    y = x * 2
    y.copy_(m.relu(s) * 3)
    (y * y * m.tensor(rng.normal(size=(2, 3)))).sum().backward()
    return x.grad.numpy(), s.grad.numpy(), y.detach().numpy()


@pytest.mark.parametrize("src_shape", [(2, 3), (3,), (1, 3)])
def test_gradients_match_torch(src_shape):
    for ours, theirs in zip(_grads(pb, src_shape), _grads(torch, src_shape)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_a_constant_source_leaves_zero_gradient_even_over_infinities():
    x = pb.tensor([np.inf, 1.0, -np.inf], requires_grad=True)
    y = x * 2
    y.copy_(pb.tensor([1.0, 2.0, 3.0]))
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])


def test_outside_a_graph_copy_writes_in_place():
    x = pb.zeros(2, 3)
    view = x[0]
    x.copy_(pb.ones(3))
    np.testing.assert_array_equal(view.numpy(), [1.0, 1.0, 1.0])
