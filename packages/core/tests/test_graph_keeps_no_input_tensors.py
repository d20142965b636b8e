"""A recorded op keeps its inputs' arrays and where their gradients go, not the input Tensors
(as PyTorch's saved variables): intermediate Tensors die with the user's last reference, and
``create_graph`` backward rebuilds them from what the node kept."""

import gc
import weakref

import numpy as np
import pytest

import pullback as pb
from pullback.errors import AutogradError


def _chain(x: pb.Tensor, w: pb.Tensor, n: int) -> pb.Tensor:
    for _ in range(n):
        x = (x * w + w).tanh() - 0.5
    return x.sum()


def test_an_intermediate_tensor_dies_with_its_last_reference_and_backward_still_runs():
    x = pb.tensor([0.3, -0.2], requires_grad=True)
    y = x * x
    seen = weakref.ref(y)
    z = (y + 1.0).sum()
    del y
    assert seen() is None  # only the graph could have kept it
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy())


def test_a_chain_of_ops_keeps_no_tensor_objects_until_the_backward():
    x = pb.tensor(np.linspace(-1, 1, 8, dtype=np.float32), requires_grad=True)
    w = pb.tensor(np.full(8, 0.5, dtype=np.float32), requires_grad=True)
    gc.collect()
    before = sum(isinstance(o, pb.Tensor) for o in gc.get_objects())
    loss = _chain(x, w, 100)
    after = sum(isinstance(o, pb.Tensor) for o in gc.get_objects())
    assert after - before <= 1  # the loss (it kept 400 intermediates before)
    loss.backward()
    assert x.grad is not None and np.isfinite(x.grad.numpy()).all()


def test_double_backward_through_rebuilt_non_leaf_inputs_matches_the_analytic_one():
    x = pb.tensor([0.7, -1.3, 2.0], dtype=pb.float64, requires_grad=True)
    y = x * x          # a non-leaf input of the product below
    z = (y * y * x).sum()   # x^5
    (g,) = pb.autograd.grad(z, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 5 * x.detach().numpy() ** 4)
    (h,) = pb.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 20 * x.detach().numpy() ** 3)


def test_a_constant_input_comes_back_as_itself_in_the_double_backward():
    c = pb.tensor([2.0, 3.0], dtype=pb.float64)  # no gradient: the node keeps it
    x = pb.tensor([1.5, -0.5], dtype=pb.float64, requires_grad=True)
    (g,) = pb.autograd.grad((x * x * c).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 2 * c.numpy() * x.detach().numpy())
    (h,) = pb.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 2 * c.numpy())


def test_a_saved_non_leaf_written_in_place_after_a_create_graph_backward_is_caught():
    x = pb.tensor([0.5, 1.5], dtype=pb.float64, requires_grad=True)
    y = x * 2.0
    (g,) = pb.autograd.grad((y * y).sum(), x, create_graph=True)
    with pb.no_grad():
        y.add_(1.0)  # the double backward's product saved y's array (rebuilt, same counter)
    with pytest.raises(AutogradError, match="modified in place"):
        g.sum().backward()
