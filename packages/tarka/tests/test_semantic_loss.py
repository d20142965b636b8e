"""Semantic loss: the closed form, the knowledge compiler and enumeration agree with a brute-force
weighted model count; gradients against torch autograd of the brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import pullback as pb
from pullback import tarka


def brute_force_loss(clauses, probs: np.ndarray) -> np.ndarray:
    """-log sum over satisfying assignments of prod p^x (1-p)^(1-x), by listing all 2^n."""
    n = probs.shape[-1]
    total = np.zeros(probs.shape[:-1])
    for bits in itertools.product((0, 1), repeat=n):
        if all(any((lit > 0) == bool(bits[abs(lit) - 1]) for lit in c) for c in clauses):
            x = np.array(bits)
            total += np.prod(np.where(x, probs, 1 - probs), axis=-1)
    return -np.log(total)


def _probs(shape, seed):
    return np.random.default_rng(seed).uniform(0.02, 0.98, shape)


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_exactly_one_closed_form_matches_brute_force(n):
    probs = _probs((4, n), n)
    ours = tarka.SemanticLoss(tarka.ExactlyOne(n), reduction="none")(pb.tensor(probs)).numpy()
    expected = -np.log(sum(probs[:, i] * np.prod(np.delete(1 - probs, i, axis=1), axis=1)
                           for i in range(n)))
    np.testing.assert_allclose(ours, expected, rtol=1e-12)
    np.testing.assert_allclose(ours, brute_force_loss(tarka.ExactlyOne(n).clauses(), probs),
                               rtol=1e-12)


CONSTRAINTS = {
    "exactly-one-6": tarka.ExactlyOne(6).clauses(),
    "chain-implications": [[-1, 2], [-2, 3], [-3, 4], [-4, 5], [1, 5]],
    "at-most-one-of-4-and-a-unit": [[-i, -j] for i in range(1, 5) for j in range(i + 1, 5)] + [[2, 3]],
    "independent-parts": [[1, 2], [-1, -2], [3, 4, 5], [-5, 6]],
    "random-3cnf": [[1, -4, 7], [-2, 5, 8], [3, -6, -8], [-1, 2, 6], [4, -7, 8], [-3, 5, -6]],
}


@pytest.mark.parametrize("method", ["compile", "enumerate"])
@pytest.mark.parametrize("name", sorted(CONSTRAINTS))
def test_cnf_counts_match_brute_force(name, method):
    clauses = CONSTRAINTS[name]
    constraint = tarka.CNF(clauses, method=method)
    probs = _probs((3, constraint.num_vars), 11)
    ours = tarka.SemanticLoss(constraint, reduction="none")(pb.tensor(probs)).numpy()
    np.testing.assert_allclose(ours, brute_force_loss(clauses, probs), rtol=1e-12)


def test_gradient_matches_torch_autograd_of_the_brute_force():
    torch = pytest.importorskip("torch")
    clauses = CONSTRAINTS["random-3cnf"]
    probs = _probs((2, 8), 12)
    p = pb.tensor(probs, requires_grad=True)
    tarka.SemanticLoss(tarka.CNF(clauses))(p).backward()
    tp = torch.tensor(probs, requires_grad=True)
    total = torch.zeros(2, dtype=torch.float64)
    for bits in itertools.product((0, 1), repeat=8):
        if all(any((lit > 0) == bool(bits[abs(lit) - 1]) for lit in c) for c in clauses):
            x = torch.tensor(bits, dtype=torch.bool)
            total = total + torch.where(x, tp, 1 - tp).prod(-1)
    (-torch.log(total)).mean().backward()
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-10)


def test_the_compiler_shares_subproblems():
    # Exactly-one of 12 has 12 models out of 4,096 assignments; the circuit stays small.
    constraint = tarka.CNF(tarka.ExactlyOne(12).clauses())
    assert 0 < constraint.circuit_size < 200


def test_size_limit_and_bad_constraints_are_clear_errors():
    with pytest.raises(tarka.CompilationLimitError, match="max_nodes=5"):
        tarka.CNF(CONSTRAINTS["random-3cnf"], max_nodes=5)
    with pytest.raises(ValueError, match="no satisfying assignment"):
        tarka.CNF([[1], [-1]])
    with pytest.raises(ValueError, match="enumeration is limited"):
        tarka.CNF([[21]], method="enumerate")
    with pytest.raises(ValueError, match="outside 1..2"):
        tarka.CNF([[1, 3]], num_vars=2)
    loss = tarka.SemanticLoss(tarka.ExactlyOne(3))
    with pytest.raises(pb.ShapeError, match="3 variables"):
        loss(pb.full((2, 4), 0.5))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        loss(pb.tensor([[0.5, 1.5, 0.2]]))


def test_certain_probabilities_stay_finite():
    loss = tarka.SemanticLoss(tarka.ExactlyOne(3), reduction="none")
    out = loss(pb.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]], dtype=pb.float64)).numpy()
    assert out[0] == pytest.approx(0.0, abs=1e-12) and math.isfinite(out[1]) and out[1] > 30
