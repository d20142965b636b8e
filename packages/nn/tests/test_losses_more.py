"""The margin, ranking, embedding, Poisson and CTC losses, the legacy reduction flags and the
weighted regression losses against PyTorch: value and gradients, float64 (1e-10) and float32
(cases: nn_cases_losses.py); CTC's own checks (finite differences on the log-probabilities,
PyTorch's gradient convention, impossible alignments, argument errors)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.errors import ShapeError

from nn_cases_losses import CASES
from nn_parity import check_loss

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_loss_matches_torch(case, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecated flags and the broadcasting warn
        check_loss(case, dtype, torch)


def _ctc_problem(rng, t=6, n=2, c=4):
    log_probs = np.log(rng.dirichlet(np.ones(c), (t, n)))
    return log_probs, np.array([[1, 2, 1], [3, 3, 0]]), np.array([t, t - 1]), np.array([3, 2])


def test_ctc_gradient_is_the_exact_derivative_of_the_loss():
    """gradcheck on the log-probabilities themselves (no normalization assumed)."""
    from pullback.testing import gradcheck

    log_probs, targets, lengths, target_lengths = _ctc_problem(np.random.default_rng(1))
    x = pullback.tensor(log_probs, requires_grad=True)
    assert gradcheck(lambda lp: nn.functional.ctc_loss(lp, pullback.tensor(targets), lengths,
                                                       target_lengths, reduction="sum"), [x])


def test_ctc_gradient_differs_from_torchs_by_the_softmax_it_assumes():
    """PyTorch's gradient with respect to log_probs is ours plus exp(log_probs) (up to each
    sequence's end): what log_softmax's backward then removes."""
    log_probs, targets, lengths, target_lengths = _ctc_problem(np.random.default_rng(2))
    x = pullback.tensor(log_probs, requires_grad=True)
    nn.functional.ctc_loss(x, pullback.tensor(targets), lengths, target_lengths,
                           reduction="sum").backward()
    tx = torch.tensor(log_probs, requires_grad=True)
    torch.nn.functional.ctc_loss(tx, torch.tensor(targets), torch.tensor(lengths),
                                 torch.tensor(target_lengths), reduction="sum").backward()
    inside = (np.arange(log_probs.shape[0])[:, None] < lengths[None, :])[:, :, None]
    np.testing.assert_allclose(np.asarray(x.grad) + np.exp(log_probs) * inside,
                               tx.grad.numpy(), atol=1e-12)


def test_ctc_impossible_alignment_is_infinite_unless_zeroed():
    log_probs = np.log(np.full((2, 1, 3), 1 / 3))
    targets, lengths, target_lengths = np.array([[1, 1]]), np.array([2]), np.array([2])
    for zero, expected in ((False, np.inf), (True, 0.0)):
        ours = nn.functional.ctc_loss(pullback.tensor(log_probs), pullback.tensor(targets),
                                      lengths, target_lengths, zero_infinity=zero,
                                      reduction="sum").item()
        theirs = torch.nn.functional.ctc_loss(
            torch.tensor(log_probs), torch.tensor(targets), torch.tensor(lengths),
            torch.tensor(target_lengths), zero_infinity=zero, reduction="sum").item()
        assert ours == theirs == expected


def test_ctc_argument_errors_name_the_function():
    lp = pullback.randn(5, 2, 4)
    with pytest.raises(ShapeError, match="ctc_loss: input_lengths"):
        nn.functional.ctc_loss(lp, pullback.tensor([[1, 2], [1, 1]]), [6, 5], [2, 2])
    with pytest.raises(ShapeError, match=r"ctc_loss: targets must be class indices in \[0, 4\)"):
        nn.functional.ctc_loss(lp, pullback.tensor([[1, 7], [1, 1]]), [5, 5], [2, 2])
    with pytest.raises(ShapeError, match="ctc_loss: 3 concatenated targets"):
        nn.functional.ctc_loss(lp, pullback.tensor([1, 2, 3]), [5, 5], [2, 2])
