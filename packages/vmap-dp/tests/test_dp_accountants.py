"""The accountants (generated from the ACCOUNTANTS registry where the behaviour is shared), the
PRV accountant against Opacus's PRVAccountant and dp-accounting's PLD accountant, and the
search for a noise multiplier against its budget."""

from __future__ import annotations

import math

import pytest

import pullback as pb
from pullback.dp import (
    ACCOUNTANTS, BudgetError, PrivacyParameterError, PRVAccountant, RDPAccountant,
    create_accountant, get_noise_multiplier, prv_epsilon,
)

NAMES = sorted(ACCOUNTANTS)
# (noise multiplier, sample rate, steps): an epoch-long DP-SGD run, and a few noisy steps
RUNS = [(1.1, 1 / 469, 1407), (0.6, 0.02, 50)]


@pytest.mark.parametrize("name", NAMES)
def test_steps_merge_and_the_state_round_trips_through_a_checkpoint(name: str, tmp_path) -> None:
    accountant = create_accountant(name)
    assert accountant.mechanism == name and len(accountant) == 0
    assert accountant.get_epsilon(1e-5) == 0.0
    for _ in range(3):
        accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    accountant.step(noise_multiplier=2.0, sample_rate=0.01, steps=5)
    assert accountant.history == [(1.0, 0.01, 3), (2.0, 0.01, 5)] and len(accountant) == 8
    pb.save({"accountant": accountant.state_dict()}, tmp_path / "state.safetensors")
    restored = create_accountant(name)
    restored.load_state_dict(pb.load(tmp_path / "state.safetensors")["accountant"])
    assert restored.history == accountant.history
    assert restored.get_epsilon(1e-5) == accountant.get_epsilon(1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_bad_parameters_are_named(name: str) -> None:
    accountant = create_accountant(name)
    with pytest.raises(PrivacyParameterError, match="noise_multiplier must be a number >= 0"):
        accountant.step(noise_multiplier=-0.5, sample_rate=0.1)
    for rate in (0.0, 1.5, -0.1):
        with pytest.raises(PrivacyParameterError, match=f"sample_rate must be in \\(0, 1\\].*{rate}"):
            accountant.step(noise_multiplier=1.0, sample_rate=rate)
    accountant.step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(PrivacyParameterError, match="delta must be in \\(0, 1\\)"):
        accountant.get_epsilon(0.0)
    other = next(n for n in NAMES if n != name)
    with pytest.raises(PrivacyParameterError, match=f"state is of the '{other}' accountant"):
        accountant.load_state_dict(create_accountant(other).state_dict())


def test_an_unknown_mechanism_lists_the_known_ones() -> None:
    with pytest.raises(LookupError, match="no accountant named 'gdp'; known: prv, rdp"):
        create_accountant("gdp")


@pytest.mark.parametrize("run", RUNS, ids=str)
def test_prv_equals_opacus_and_agrees_with_the_pld_accountant(run) -> None:
    sigma, q, steps = run
    opacus = pytest.importorskip("opacus.accountants")
    ours = PRVAccountant()
    ours.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
    theirs = opacus.PRVAccountant()
    theirs.history = [run]
    eps = ours.get_epsilon(1e-5)
    # the same construction (Gopi et al.), computed independently: equal to rounding
    assert eps == pytest.approx(theirs.get_epsilon(delta=1e-5), rel=1e-6)
    rdp = RDPAccountant()
    rdp.history = list(ours.history)
    assert eps < rdp.get_epsilon(1e-5)  # PRV composition is tighter than RDP
    dp_accounting = pytest.importorskip("dp_accounting")
    pld = dp_accounting.pld.PLDAccountant()  # value_discretization_interval 1e-4
    pld.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    # ours is an upper bound: the estimate plus eps_error (0.01); PLD is a pessimistic
    # discretization whose error is of the order of its interval
    assert pld.get_epsilon(1e-5) - 1e-3 <= eps <= pld.get_epsilon(1e-5) + 0.02


def test_prv_of_a_history_of_phases_equals_opacus() -> None:
    opacus = pytest.importorskip("opacus.accountants")
    history = [(1.0, 0.01, 500), (2.0, 0.02, 300), (0.8, 0.01, 200)]
    theirs = opacus.PRVAccountant()
    theirs.history = list(history)
    assert prv_epsilon(history, 1e-5) == pytest.approx(theirs.get_epsilon(delta=1e-5), rel=1e-6)


def test_prv_without_noise_is_no_privacy() -> None:
    assert prv_epsilon([(0.0, 0.1, 10)], 1e-5) == math.inf


Q, STEPS = 256 / 60_000, 3 * 235  # three epochs of Fashion-MNIST at batch 256


@pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha")
@pytest.mark.parametrize("target", [1.0, 8.0])
def test_the_noise_multiplier_meets_the_budget_as_opacus_finds_it(target: float) -> None:
    sigma = get_noise_multiplier(target_epsilon=target, target_delta=1e-5, sample_rate=Q,
                                 steps=STEPS, accountant="rdp", epsilon_tolerance=0.01)
    accountant = RDPAccountant()
    accountant.step(noise_multiplier=sigma, sample_rate=Q, steps=STEPS)
    assert target - 0.01 <= accountant.get_epsilon(1e-5) <= target
    opacus = pytest.importorskip("opacus.accountants.utils")
    theirs = opacus.get_noise_multiplier(target_epsilon=target, target_delta=1e-5,
                                         sample_rate=Q, steps=STEPS, accountant="rdp",
                                         epsilon_tolerance=0.01)
    # two bisections to within the tolerance of the same epsilon curve
    assert sigma == pytest.approx(theirs, rel=0.02)


def test_the_noise_multiplier_meets_a_prv_budget() -> None:
    sigma = get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5, sample_rate=Q,
                                 steps=STEPS, accountant="prv", epsilon_tolerance=0.1)
    assert 2.9 <= prv_epsilon([(sigma, Q, STEPS)], 1e-5) <= 3.0


def test_epochs_count_whole_steps() -> None:
    by_epochs = get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5, sample_rate=1 / 469,
                                     epochs=3)
    by_steps = get_noise_multiplier(target_epsilon=3.0, target_delta=1e-5, sample_rate=1 / 469,
                                    steps=1407)
    assert by_epochs == by_steps


@pytest.mark.parametrize("kwargs,error,message", [
    (dict(target_epsilon=0.05), BudgetError, "target_epsilon=0.05 cannot be reached"),
    (dict(target_epsilon=0.0), BudgetError, "target_epsilon must be > 0"),
    (dict(sample_rate=0.0), PrivacyParameterError, "sample_rate must be in \\(0, 1\\]"),
    (dict(target_delta=1.0), PrivacyParameterError, "delta must be in \\(0, 1\\)"),
    (dict(epochs=2), PrivacyParameterError, "either epochs or steps, not both"),
])
def test_the_search_refuses_what_it_cannot_do(kwargs, error, message: str) -> None:
    """RDP's conversion cannot go below about 0.1 at delta=1e-5 with orders up to 63 however
    large the noise: 0.05 is out of reach."""
    args = dict(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=100,
                accountant="rdp") | kwargs
    with pytest.raises(error, match=message):
        get_noise_multiplier(**args)
