"""The stack's backward (rebuilding every block's input) gives the gradients of ordinary
backpropagation through the same blocks, in float64 to 1e-10, and of finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.avyaya import COUPLINGS
from pullback.testing import gradcheck

from avyaya_helpers import grads, make_stack, ordinary, worst_relative


def _loss(y, log_det):
    # Weights every output element differently, and uses log_det (zero for additive blocks).
    w = pb.tensor(np.linspace(-1.0, 2.0, y.shape[-1]))
    return ((y * y).sum(axis=0) * w).sum() + (y.sin()).sum() - 0.5 * log_det.sum()


@pytest.mark.parametrize("depth", [10, 100, 500])
@pytest.mark.parametrize("kind", sorted(COUPLINGS))
def test_gradients_equal_ordinary_backprop(kind, depth):
    stack = make_stack(kind, depth, features=8)
    x_np = np.random.default_rng(3).standard_normal((5, 8))

    x = pb.tensor(x_np, requires_grad=True)
    _loss(*stack.forward_with_log_det(x)).backward()
    reversible = grads(stack, x)

    stack.zero_grad()
    x = pb.tensor(x_np, requires_grad=True)
    _loss(*ordinary(stack, x)).backward()
    assert worst_relative(reversible, grads(stack, x)) <= 1e-10


@pytest.mark.parametrize("kind", sorted(COUPLINGS))
def test_autograd_grad_reaches_parameters_without_touching_grad(kind):
    stack = make_stack(kind, 4, features=6)
    x = pb.tensor(np.random.default_rng(4).standard_normal((3, 6)), requires_grad=True)
    params = list(stack.parameters())
    got = pb.autograd.grad(_loss(*stack.forward_with_log_det(x)), [x, *params])
    assert all(p.grad is None for p in params)
    want = pb.autograd.grad(_loss(*ordinary(stack, x)), [x, *params])
    assert worst_relative([g.numpy() for g in got], [g.numpy() for g in want]) <= 1e-12


@pytest.mark.parametrize("kind", sorted(COUPLINGS))
def test_gradcheck_of_the_stack(kind):
    stack = make_stack(kind, 3, features=4)
    x = pb.tensor(np.random.default_rng(5).standard_normal((2, 4)), requires_grad=True)
    assert gradcheck(lambda v: stack.forward_with_log_det(v), x, eps=1e-6, atol=1e-8, rtol=1e-6)


def test_frozen_parameters_get_no_gradient_and_the_rest_do():
    stack = make_stack("additive", 3, features=4)
    for p in stack[1].parameters():
        p.requires_grad_(False)
    x = pb.tensor(np.random.default_rng(6).standard_normal((2, 4)), requires_grad=True)
    _loss(*stack.forward_with_log_det(x)).backward()
    reversible = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in stack.parameters()
                                            if p.requires_grad]
    assert all(p.grad is None for p in stack[1].parameters())
    stack.zero_grad()
    x = pb.tensor(x.detach().numpy(), requires_grad=True)
    _loss(*ordinary(stack, x)).backward()
    expected = [x.grad.numpy()] + [p.grad.numpy() for p in stack.parameters() if p.requires_grad]
    assert worst_relative(reversible, expected) <= 1e-12


def test_a_block_used_twice_sums_its_gradients():
    stack = make_stack("additive", 2, features=4)
    shared = stack[0]
    twice = type(stack)([shared, stack[1], shared])
    x = pb.tensor(np.random.default_rng(7).standard_normal((3, 4)), requires_grad=True)
    _loss(*twice.forward_with_log_det(x)).backward()
    reversible = grads(twice, x)
    twice.zero_grad()
    x = pb.tensor(x.detach().numpy(), requires_grad=True)
    _loss(*ordinary(twice, x)).backward()
    assert worst_relative(reversible, grads(twice, x)) <= 1e-12


def test_backward_twice_with_retain_graph():
    stack = make_stack("affine", 3, features=4)
    x = pb.tensor(np.random.default_rng(8).standard_normal((2, 4)), requires_grad=True)
    loss = _loss(*stack.forward_with_log_det(x))
    loss.backward(retain_graph=True)
    once = grads(stack, x)
    loss.backward()
    assert worst_relative(grads(stack, x), [2 * g for g in once]) <= 1e-14
