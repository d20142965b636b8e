"""Ten AdamW steps through the reversible stack leave the same weights as ten steps through
the ordinary path (the same blocks, every activation stored), from the same start."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import nn, optim
from pullback.avyaya import COUPLINGS

from avyaya_helpers import make_stack, ordinary, worst_relative

STEPS = 10


def _train(kind: str, reversible: bool) -> tuple[list[np.ndarray], list[float]]:
    stack = make_stack(kind, 20, features=8)
    head = nn.Linear(8, 3).double()
    params = list(stack.parameters()) + list(head.parameters())
    opt = optim.AdamW(params, lr=1e-2, weight_decay=0.01)
    rng = np.random.default_rng(9)
    losses = []
    for _ in range(STEPS):
        x = pb.tensor(rng.standard_normal((16, 8)))
        target = pb.tensor(rng.integers(0, 3, 16))
        y, log_det = stack.forward_with_log_det(x) if reversible else ordinary(stack, x)
        loss = nn.functional.cross_entropy(head(y), target) - 1e-3 * log_det.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return [p.detach().numpy().copy() for p in params], losses


@pytest.mark.parametrize("kind", sorted(COUPLINGS))
def test_ten_steps_give_the_weights_of_the_ordinary_path(kind):
    weights, losses = _train(kind, reversible=True)
    expected, expected_losses = _train(kind, reversible=False)
    assert worst_relative(weights, expected) <= 1e-10
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-12)
    assert losses[-1] < losses[0]  # it trained
