"""PrivacyEngine end to end: make_private trains and accounts one step per Poisson batch,
make_private_with_epsilon spends what it was asked to, the Poisson loader samples at its rate
(empty batches included), and what cannot be private is refused."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import nn, optim
from pullback.dp import (
    BudgetError, DPDataLoader, DPOptimizer, GradSampleModule, PrivacyEngine,
    PrivacyParameterError,
)
from pullback.nn.data import DataLoader, TensorDataset


def problem(n: int = 512, seed: int = 0) -> TensorDataset:
    """Two Gaussian blobs: a linear model separates them."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = (rng.standard_normal((n, 4)) + 2.0 * y[:, None]).astype(np.float32)
    return TensorDataset(pb.tensor(x), pb.tensor(y))


def accuracy(model: nn.Module, data: TensorDataset) -> float:
    x, y = data.tensors
    with pb.no_grad():
        return float((model(x).argmax(axis=1) == y).numpy().mean())


def test_make_private_trains_and_accounts_each_poisson_batch() -> None:
    pb.manual_seed(0)
    data = problem()
    model = nn.Linear(4, 2)
    engine = PrivacyEngine(accountant="rdp")
    model, opt, loader = engine.make_private(
        module=model, optimizer=optim.SGD(model.parameters(), lr=0.5),
        data_loader=DataLoader(data, batch_size=64), noise_multiplier=1.0, max_grad_norm=1.0)
    assert isinstance(model, GradSampleModule) and isinstance(opt, DPOptimizer)
    assert isinstance(loader, DPDataLoader) and len(loader) == 8
    assert opt.expected_batch_size == 64 and loader.sample_rate == 1 / 8
    for _ in range(3):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    assert engine.accountant.history == [(1.0, 1 / 8, 24)]
    assert accuracy(model, data) > 0.9
    assert 0 < engine.get_epsilon(1e-5) < float("inf")


@pytest.mark.parametrize("accountant", ["rdp", "prv"])
def test_make_private_with_epsilon_spends_the_target(accountant: str) -> None:
    data = problem()
    model = nn.Linear(4, 2)
    engine = PrivacyEngine(accountant=accountant)
    model, opt, loader = engine.make_private_with_epsilon(
        module=model, optimizer=optim.SGD(model.parameters(), lr=0.5),
        data_loader=DataLoader(data, batch_size=64), target_epsilon=3.0, target_delta=1e-5,
        epochs=2, max_grad_norm=1.0, epsilon_tolerance=0.05)
    for _ in range(2):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    assert len(engine.accountant) == 16
    assert 2.95 <= engine.get_epsilon(1e-5) <= 3.0


def test_an_unreachable_epsilon_is_refused() -> None:
    model = nn.Linear(4, 2)
    with pytest.raises(BudgetError, match="target_epsilon=0.05 cannot be reached"):
        PrivacyEngine(accountant="rdp").make_private_with_epsilon(
            module=model, optimizer=optim.SGD(model.parameters(), lr=0.1),
            data_loader=DataLoader(problem(), batch_size=64), target_epsilon=0.05,
            target_delta=1e-5, epochs=1, max_grad_norm=1.0)


def test_poisson_batches_have_the_expected_size_and_may_be_empty() -> None:
    loader = DPDataLoader(problem(200), sample_rate=0.05, steps=400, generator=3)
    sizes = np.array([x.shape[0] for x, _ in loader])
    # binomial(200, 0.05): mean 10, variance 9.5; the mean of 400 batches within 4 std errors
    assert abs(sizes.mean() - 10) < 4 * np.sqrt(9.5 / 400)
    assert abs(sizes.var() - 9.5) < 3.0
    tiny = DPDataLoader(problem(20), sample_rate=0.01, steps=50, generator=0)
    empty = [(x, y) for x, y in tiny if x.shape[0] == 0]
    assert empty and empty[0][0].shape == (0, 4) and empty[0][1].shape == (0,)


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # the mean loss of no sample
@pytest.mark.filterwarnings("ignore:divide by zero encountered")
def test_an_empty_batch_is_a_step_of_noise_alone() -> None:
    model = nn.Linear(4, 2)
    engine = PrivacyEngine(accountant="rdp")
    model, opt, _ = engine.make_private(
        module=model, optimizer=optim.SGD(model.parameters(), lr=0.1),
        data_loader=DataLoader(problem(64), batch_size=8), noise_multiplier=1.0,
        max_grad_norm=1.0, noise_generator=0)
    x, y = pb.zeros(0, 4), pb.zeros(0, dtype="int64")
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    noise = np.random.default_rng(0).standard_normal((2, 4), dtype=np.float32)  # weight first
    np.testing.assert_allclose(model._module.weight.grad.numpy(), noise / 8, rtol=1e-6)
    assert len(engine.accountant) == 1


def test_without_poisson_sampling_the_loader_is_kept_and_batches_accumulate() -> None:
    model = nn.Linear(4, 2)
    loader = DataLoader(problem(64), batch_size=8, shuffle=True)
    engine = PrivacyEngine(accountant="rdp")
    model, opt, same = engine.make_private(
        module=model, optimizer=optim.SGD(model.parameters(), lr=0.1), data_loader=loader,
        noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=False)
    assert same is loader
    batches = iter(loader)
    for _ in range(2):  # two batches, one step: accounted at twice the sample rate
        x, y = next(batches)
        nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    assert engine.accountant.history == [(1.0, 2 / 8, 1)]


def test_the_optimizer_must_update_the_module() -> None:
    model, other = nn.Linear(4, 2), nn.Linear(4, 2)
    with pytest.raises(PrivacyParameterError, match="not parameters of the module"):
        PrivacyEngine().make_private(
            module=model, optimizer=optim.SGD(other.parameters(), lr=0.1),
            data_loader=DataLoader(problem(64), batch_size=8), noise_multiplier=1.0,
            max_grad_norm=1.0)


@pytest.mark.parametrize("rate", [0.0, 1.01, -0.5])
def test_a_sample_rate_outside_the_unit_interval_is_refused(rate: float) -> None:
    with pytest.raises(PrivacyParameterError, match="sample_rate must be in \\(0, 1\\]"):
        DPDataLoader(problem(64), sample_rate=rate)
