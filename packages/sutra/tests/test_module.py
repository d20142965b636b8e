"""NeuralODE as a block of an ordinary model: its parameters are the vector field's, it trains
with an optimizer, adjoint and direct backpropagation give the same gradients, and it counts
its evaluations. Also: the docstring examples run."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.sutra import NeuralODE, odeint


class Field(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, width), nn.Tanh(), nn.Linear(width, 2))

    def forward(self, t, y):
        return self.net(y)


def _double(module: nn.Module) -> nn.Module:
    return module.to(pullback.float64)


def test_parameters_are_the_fields() -> None:
    field = Field()
    block = NeuralODE(field)
    assert [p is q for p, q in zip(block.parameters(), field.parameters())] == [True] * 4
    assert "solver='dopri5'" in repr(block)


def test_adjoint_and_direct_gradients_agree() -> None:
    pullback.manual_seed(0)
    field = _double(Field())
    x = pullback.randn(5, 2, dtype=pullback.float64)
    grads = []
    for adjoint in (True, False):
        field.zero_grad()
        block = NeuralODE(field, rtol=1e-10, atol=1e-10, adjoint=adjoint)
        (block(x) ** 2).sum().backward()
        grads.append([p.grad.numpy() for p in field.parameters()])
        assert block.nfe > 0
    for a, d in zip(*grads):
        np.testing.assert_allclose(a, d, rtol=1e-6, atol=1e-8)


def test_trajectory_matches_odeint() -> None:
    field = _double(Field())
    x, t = pullback.randn(3, 2, dtype=pullback.float64), pullback.linspace(0.0, 1.0, 4,
                                                                          dtype=pullback.float64)
    block = NeuralODE(field, solver="rk4", options={"step_size": 0.1})
    with pullback.no_grad():
        ours = block(x, t)
        ref = odeint(field, x, t, method="rk4", options={"step_size": 0.1})
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    np.testing.assert_array_equal(block(x).detach().numpy(), ref[-1].numpy())


def test_counts_forward_and_backward_evaluations() -> None:
    block = NeuralODE(_double(Field()), solver="rk4", options={"step_size": 0.25})
    block(pullback.randn(2, 2, dtype=pullback.float64)).sum().backward()
    assert block.nfe == 16  # four steps of four stages
    assert block.nfe_backward == 16  # the adjoint: the same grid backwards


def test_trains_inside_a_model() -> None:
    optim = pytest.importorskip("pullback.optim")
    pullback.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 2), NeuralODE(Field(), solver="tsit5"), nn.Linear(2, 1))
    opt = optim.Adam(model.parameters(), lr=0.05)
    x = pullback.randn(32, 2)
    y = (x[:, :1] * 2 - x[:, 1:]).detach()
    losses = []
    for _ in range(30):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < 0.2 * losses[0], losses


@pytest.mark.parametrize("module", ["_odeint", "_adjoint", "_events", "_module"])
def test_docstring_examples_run(module: str) -> None:
    import importlib

    mod = importlib.import_module(f"pullback.sutra.{module}")
    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0
