"""pullback.nn.utils under PyTorch's names, against torch.nn.utils: clip_grad_norm_,
clip_grad_value_ (pullback.optim's), parameters_to_vector and vector_to_parameters."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
import pullback.nn as nn

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of torch.nn.utils")


def twin_models() -> tuple[nn.Module, torch.nn.Module]:
    ours = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).to(dtype=pullback.float64)
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                 torch.nn.Linear(4, 2)).double()
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))
    x = np.random.default_rng(0).standard_normal((5, 3))
    (ours(pullback.tensor(x)) ** 2).sum().backward()
    (theirs(torch.tensor(x)) ** 2).sum().backward()
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_clip_grad_norm_matches_torch(norm_type: float) -> None:
    pytest.importorskip("pullback.optim")
    ours, theirs = twin_models()
    total = nn.utils.clip_grad_norm_(ours.parameters(), 0.5, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs.parameters(), 0.5, norm_type=norm_type)
    np.testing.assert_allclose(float(total), float(expected), rtol=1e-12)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_clip_grad_value_matches_torch() -> None:
    pytest.importorskip("pullback.optim")
    ours, theirs = twin_models()
    nn.utils.clip_grad_value_(ours.parameters(), 0.1)
    torch.nn.utils.clip_grad_value_(theirs.parameters(), 0.1)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert np.abs(p.grad.numpy()).max() <= 0.1
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_parameters_to_vector_and_back_match_torch() -> None:
    ours, theirs = twin_models()
    vec = nn.utils.parameters_to_vector(ours.parameters())
    expected = torch.nn.utils.parameters_to_vector(theirs.parameters())
    np.testing.assert_array_equal(vec.detach().numpy(), expected.detach().numpy())
    # it stays in the graph: d(sum of squares)/dp = 2p
    (vec ** 2).sum().backward()
    new = np.arange(vec.shape[0], dtype=np.float64)
    nn.utils.vector_to_parameters(pullback.tensor(new), ours.parameters())
    torch.nn.utils.vector_to_parameters(torch.tensor(new), theirs.parameters())
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        assert isinstance(p, nn.Parameter) and p.requires_grad
    with pytest.raises(pullback.ShapeError, match="hold 26 values"):
        nn.utils.vector_to_parameters(pullback.zeros(3), ours.parameters())
    with pytest.raises(TypeError):
        nn.utils.vector_to_parameters(new, ours.parameters())
