"""The scalar teaching engine agrees with the Tensor engine."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback as pb
from pullback.scalar import Neuron, Value


def test_value_gradients_match_closed_form():
    a, b = Value(2.0), Value(-3.0)
    c = (a * b + a.exp() - b / a + (a**2).log()).tanh() + (b.relu() - 1)
    c.backward()
    t = math.tanh(-6 + math.exp(2) + 1.5 + math.log(4))
    dt = 1 - t * t
    assert c.data == pytest.approx(t - 1)
    assert a.grad == pytest.approx(dt * (-3 + math.exp(2) - 3 / 4 + 1.0))
    assert b.grad == pytest.approx(dt * (2 - 0.5))


def test_deep_value_graph_has_no_recursion_limit():
    x = Value(1.0)
    y = x
    for _ in range(20_000):
        y = y * 1.0
    y.backward()
    assert x.grad == 1.0


def test_tiny_mlp_trains_and_matches_tensor_engine_gradients():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((3, 4)) * 0.5, rng.standard_normal(4) * 0.1
    w2, b2 = rng.standard_normal((4, 1)) * 0.5, rng.standard_normal(1) * 0.1
    xs = rng.standard_normal((8, 3))
    ys = np.sign(xs[:, 0] * xs[:, 1])

    hidden = [Neuron(w1[:, j], b1[j]) for j in range(4)]
    out = Neuron(w2[:, 0], b2[0], nonlinear=False)
    params = [p for n in hidden + [out] for p in n.parameters()]

    def scalar_loss():
        total = Value(0.0)
        for x, y in zip(xs, ys):
            h = [n([Value(v) for v in x]) for n in hidden]
            total = total + (out(h) - y) ** 2
        return total / len(xs)

    loss = scalar_loss()
    loss.backward()

    tw1, tb1 = pb.tensor(w1, requires_grad=True), pb.tensor(b1, requires_grad=True)
    tw2, tb2 = pb.tensor(w2, requires_grad=True), pb.tensor(b2, requires_grad=True)
    pred = ((pb.tensor(xs) @ tw1 + tb1).tanh() @ tw2 + tb2).reshape(-1)
    tloss = ((pred - pb.tensor(ys)) ** 2).mean()
    tloss.backward()
    assert loss.data == pytest.approx(tloss.item(), rel=1e-12)
    scalar_w1 = np.array([[hidden[j].w[i].grad for j in range(4)] for i in range(3)])
    np.testing.assert_allclose(scalar_w1, tw1.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose([out.w[j].grad for j in range(4)], tw2.grad.numpy()[:, 0], rtol=1e-10)

    for _ in range(100):  # plain gradient descent drives the loss down
        for p in params:
            p.grad = 0.0
        loss = scalar_loss()
        loss.backward()
        for p in params:
            p.data -= 0.1 * p.grad
    assert loss.data < 0.5 * tloss.item()
