"""pullback.distributions against torch.distributions: log_prob, entropy and their gradients
with respect to the parameters, shapes of samples, and the frequencies of samples."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pullback
from pullback import distributions as D

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
PROBS = RNG.dirichlet(np.ones(4), (3,))
LOGITS = RNG.standard_normal((3, 4))


def _both(array: np.ndarray, grad: bool = True) -> tuple[Any, Any]:
    return (pullback.tensor(array, dtype="float64", requires_grad=grad),
            torch.tensor(array, dtype=torch.float64, requires_grad=grad))


def _check(ours: Any, theirs: Any, params: list[tuple[Any, Any]]) -> None:
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    weights = RNG.standard_normal(tuple(theirs.shape))
    (ours * pullback.tensor(weights)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    for a, b in params:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["probs", "logits"])
@pytest.mark.parametrize("what", ["log_prob", "entropy"])
def test_categorical(kind: str, what: str) -> None:
    p, tp = _both(PROBS if kind == "probs" else LOGITS)
    ours, theirs = D.Categorical(**{kind: p}), torch.distributions.Categorical(**{kind: tp})
    np.testing.assert_allclose(ours.probs.detach().numpy(), theirs.probs.detach().numpy())
    if what == "log_prob":
        value = np.array([[0, 3, 1], [2, 2, 0]])  # (2, 3): broadcast against batch (3,)
        _check(ours.log_prob(pullback.tensor(value)), theirs.log_prob(torch.tensor(value)),
               [(p, tp)])
    else:
        _check(ours.entropy(), theirs.entropy(), [(p, tp)])


def test_categorical_with_a_zero_probability_has_a_finite_entropy() -> None:
    probs = np.array([0.0, 0.25, 0.75])
    p, tp = _both(probs)
    _check(D.Categorical(probs=p).entropy(), torch.distributions.Categorical(probs=tp).entropy(),
           [(p, tp)])


@pytest.mark.parametrize("kind", ["probs", "logits"])
@pytest.mark.parametrize("what", ["log_prob", "entropy"])
def test_bernoulli(kind: str, what: str) -> None:
    array = RNG.uniform(0.05, 0.95, (5,)) if kind == "probs" else RNG.standard_normal(5)
    p, tp = _both(array)
    ours, theirs = D.Bernoulli(**{kind: p}), torch.distributions.Bernoulli(**{kind: tp})
    if what == "log_prob":
        value = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
        _check(ours.log_prob(pullback.tensor(value)), theirs.log_prob(torch.tensor(value)),
               [(p, tp)])
    else:
        _check(ours.entropy(), theirs.entropy(), [(p, tp)])


@pytest.mark.parametrize("what", ["log_prob", "entropy", "rsample-shape"])
def test_normal(what: str) -> None:
    (loc, tloc), (scale, tscale) = _both(RNG.standard_normal((2, 3))), _both(RNG.uniform(
        0.5, 2, (3,)))
    ours, theirs = D.Normal(loc, scale), torch.distributions.Normal(tloc, tscale)
    if what == "log_prob":
        value = RNG.standard_normal((4, 2, 3))
        _check(ours.log_prob(pullback.tensor(value)), theirs.log_prob(torch.tensor(value)),
               [(loc, tloc), (scale, tscale)])
    elif what == "entropy":
        _check(ours.entropy(), theirs.entropy(), [(scale, tscale)])
    else:
        draw = ours.rsample((5,))
        assert draw.shape == tuple(theirs.rsample((5,)).shape) == (5, 2, 3)
        draw.sum().backward()
        np.testing.assert_allclose(loc.grad.numpy(), np.full((2, 3), 5.0))
        assert not ours.sample().requires_grad


@pytest.mark.parametrize("make", [
    lambda lib: lib.distributions.Categorical(probs=lib.tensor([[0.1, 0.2, 0.7]] * 2)),
    lambda lib: lib.distributions.Bernoulli(probs=lib.tensor([0.3, 0.9])),
    lambda lib: lib.distributions.Normal(lib.tensor([0.0, 1.0]), lib.tensor(2.0)),
], ids=["categorical", "bernoulli", "normal"])
def test_sample_shapes_and_frequencies_match_torch(make: Any) -> None:
    pullback.manual_seed(0)
    torch.manual_seed(0)
    ours, theirs = make(pullback), make(torch)
    assert ours.batch_shape == tuple(theirs.batch_shape)
    assert ours.sample().shape == tuple(theirs.sample().shape)
    draws = ours.sample((20000,)).numpy().astype(np.float64)
    reference = theirs.sample((20000,)).numpy().astype(np.float64)
    assert draws.shape == reference.shape
    # Means agree to within a few standard errors of 20,000 draws.
    np.testing.assert_allclose(draws.mean(0), reference.mean(0), atol=0.06)
    np.testing.assert_allclose(draws.std(0), reference.std(0), atol=0.06)


def test_exactly_one_of_probs_and_logits() -> None:
    for lib in (pullback, torch):
        with pytest.raises(ValueError, match="Either `probs` or `logits`"):
            lib.distributions.Categorical()
        with pytest.raises(ValueError, match="Either `probs` or `logits`"):
            lib.distributions.Bernoulli(probs=lib.tensor(0.5), logits=lib.tensor(0.0))


def test_reached_as_an_attribute_after_import_pullback_as_torch() -> None:
    assert pullback.distributions.Categorical is D.Categorical
