"""Every loss of ``pullback.nn.functional`` at the edges of its domain against PyTorch: BCE at
probabilities of exactly 0 and 1, logits of +-1000, log-probabilities of -inf, zero targets of
KL divergence, NLL and cross-entropy with every target ignored, margins met exactly, zero
vectors and distances, zero variances, impossible CTC alignments. Values and gradients
(float64) must agree, NaN and infinities included, under each reduction."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest

import pullback
import pullback.nn.functional as PF

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

INF, NAN = math.inf, math.nan


class Case:
    """One call of a loss: its differentiable inputs, its other inputs, and the call."""

    def __init__(self, loss: str, inputs: list[Any], others: list[Any],
                 call: Callable[..., Any], reductions: tuple[str, ...] = ("none", "sum", "mean")):
        self.loss, self.inputs, self.others, self.call = loss, inputs, others, call
        self.reductions = reductions


def _bce(F, x, t, r):
    return F.binary_cross_entropy(x, t, reduction=r)


CASES: dict[str, Case] = {
    "bce_at_0_and_1": Case("binary_cross_entropy", [[0.0, 1.0, 0.0, 1.0, 0.5]],
                           [[0.0, 1.0, 1.0, 0.0, 0.5]], _bce),
    "bce_weighted_at_0": Case("binary_cross_entropy", [[0.0, 1.0, 0.25]],
                              [[1.0, 0.0, 1.0], [2.0, 0.5, 0.0]],
                              lambda F, x, t, w, r: F.binary_cross_entropy(x, t, w, reduction=r)),
    "bce_logits_huge": Case("binary_cross_entropy_with_logits",
                            [[-1000.0, 1000.0, 0.0, -50.0, 50.0]], [[0.0, 1.0, 0.5, 1.0, 0.0]],
                            lambda F, x, t, r: F.binary_cross_entropy_with_logits(
                                x, t, reduction=r)),
    "bce_logits_pos_weight": Case("binary_cross_entropy_with_logits", [[-1000.0, 1000.0, 3.0]],
                                  [[1.0, 0.0, 1.0], [2.0, 3.0, 0.0]],
                                  lambda F, x, t, w, r: F.binary_cross_entropy_with_logits(
                                      x, t, pos_weight=w, reduction=r)),
    "kl_div_zero_targets": Case("kl_div", [[-1.0, -2.0, -0.5]], [[0.5, 0.0, 0.5]],
                                lambda F, x, t, r: F.kl_div(x, t, reduction=r),
                                ("none", "sum", "batchmean")),
    "kl_div_minus_inf_input_zero_target": Case("kl_div", [[-1.0, -INF, -0.5]],
                                               [[0.5, 0.0, 0.5]],
                                               lambda F, x, t, r: F.kl_div(x, t, reduction=r),
                                               ("none", "sum")),
    "kl_div_log_target_minus_inf": Case("kl_div", [[-1.0, -2.0, -0.5]], [[-0.7, -INF, -0.7]],
                                        lambda F, x, t, r: F.kl_div(x, t, reduction=r,
                                                                    log_target=True),
                                        ("none", "sum")),
    "nll_all_ignored": Case("nll_loss", [[[-1.0, -2.0], [-0.5, -3.0]]], [[-100, -100]],
                            lambda F, x, t, r: F.nll_loss(x, t.long(), reduction=r)),
    "nll_zero_weights": Case("nll_loss", [[[-1.0, -2.0], [-0.5, -3.0]]], [[0, 0], [0.0, 1.0]],
                             lambda F, x, t, w, r: F.nll_loss(x, t.long(), w, reduction=r)),
    "nll_ignore_index_class": Case("nll_loss", [[[-1.0, -2.0], [-0.5, -3.0]]], [[1, 0]],
                                   lambda F, x, t, r: F.nll_loss(x, t.long(), ignore_index=1,
                                                                 reduction=r)),
    "cross_entropy_all_ignored": Case("cross_entropy", [[[1.0, 2.0], [0.5, 3.0]]],
                                      [[-100, -100]],
                                      lambda F, x, t, r: F.cross_entropy(x, t.long(),
                                                                         reduction=r)),
    "cross_entropy_ignored_with_smoothing": Case(
        "cross_entropy", [[[1.0, 2.0, 0.0], [0.5, 3.0, 1.0]]], [[-100, 2]],
        lambda F, x, t, r: F.cross_entropy(x, t.long(), reduction=r, label_smoothing=0.2)),
    "cross_entropy_minus_inf_other_class": Case(
        "cross_entropy", [[[1.0, -INF, 0.0], [-INF, 3.0, 1.0]]], [[0, 1]],
        lambda F, x, t, r: F.cross_entropy(x, t.long(), reduction=r)),
    "cross_entropy_minus_inf_target_class": Case(
        "cross_entropy", [[[-INF, 1.0], [2.0, 0.0]]], [[0, 0]],
        lambda F, x, t, r: F.cross_entropy(x, t.long(), reduction=r)),
    "cross_entropy_probabilities_with_zeros": Case(
        "cross_entropy", [[[1.0, 2.0, 0.0], [0.5, 3.0, 1.0]]], [[[0.0, 1.0, 0.0],
                                                                 [0.5, 0.0, 0.5]]],
        lambda F, x, t, r: F.cross_entropy(x, t, reduction=r)),
    "poisson_nll_zero_rate": Case("poisson_nll_loss", [[0.0, 1.0, 2.0]], [[0.0, 1.0, 3.0]],
                                  lambda F, x, t, r: F.poisson_nll_loss(
                                      x, t, log_input=False, full=True, reduction=r)),
    "poisson_nll_log_input_full": Case("poisson_nll_loss", [[-50.0, 0.0, 2.0]],
                                       [[0.0, 1.0, 5.0]],
                                       lambda F, x, t, r: F.poisson_nll_loss(
                                           x, t, full=True, reduction=r)),
    "gaussian_nll_zero_variance": Case("gaussian_nll_loss", [[1.0, 2.0, 3.0], [0.0, 1e-9, 1.0]],
                                       [[1.0, 2.5, 0.0]],
                                       lambda F, x, v, t, r: F.gaussian_nll_loss(
                                           x, t, v, full=True, reduction=r)),
    "huber_at_delta": Case("huber_loss", [[1.0, -1.0, 0.0, 2.0]], [[0.0, 0.0, 0.0, 0.0]],
                           lambda F, x, t, r: F.huber_loss(x, t, reduction=r, delta=1.0)),
    "smooth_l1_beta_zero": Case("smooth_l1_loss", [[1.0, -1.0, 0.0]], [[0.0, 0.0, 0.0]],
                                lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r,
                                                                    beta=0.0)),
    "smooth_l1_at_beta": Case("smooth_l1_loss", [[0.5, -0.5, 0.0]], [[0.0, 0.0, 0.0]],
                              lambda F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.5)),
    "l1_at_zero": Case("l1_loss", [[1.0, 0.0, -2.0]], [[1.0, 0.0, 0.0]],
                       lambda F, x, t, r: F.l1_loss(x, t, reduction=r)),
    "mse_at_zero": Case("mse_loss", [[1.0, 0.0]], [[1.0, 0.0]],
                        lambda F, x, t, r: F.mse_loss(x, t, reduction=r)),
    "hinge_embedding_at_margin": Case("hinge_embedding_loss", [[1.0, 0.5, 2.0, 0.0]],
                                      [[-1.0, -1.0, 1.0, -1.0]],
                                      lambda F, x, t, r: F.hinge_embedding_loss(x, t,
                                                                                reduction=r)),
    "margin_ranking_at_margin": Case("margin_ranking_loss", [[1.0, 2.0], [1.5, 1.0]],
                                     [[1.0, -1.0]],
                                     lambda F, a, b, t, r: F.margin_ranking_loss(
                                         a, b, t, margin=0.5, reduction=r)),
    "soft_margin_huge": Case("soft_margin_loss", [[1000.0, -1000.0, 0.0]], [[-1.0, -1.0, 1.0]],
                             lambda F, x, t, r: F.soft_margin_loss(x, t, reduction=r)),
    "multi_margin_at_margin": Case("multi_margin_loss", [[[1.0, 0.0, 0.5], [2.0, 1.0, 1.0]]],
                                   [[0, 1]],
                                   lambda F, x, t, r: F.multi_margin_loss(x, t.long(),
                                                                          reduction=r)),
    "multilabel_margin_terminated": Case("multilabel_margin_loss",
                                         [[[0.1, 0.2, 0.4, 0.8], [1.0, 0.0, 0.0, 1.0]]],
                                         [[[3, 0, -1, 1], [-1, 0, 1, 2]]],
                                         lambda F, x, t, r: F.multilabel_margin_loss(
                                             x, t.long(), reduction=r)),
    "multilabel_soft_margin_huge": Case("multilabel_soft_margin_loss",
                                        [[[1000.0, -1000.0], [0.0, 50.0]]],
                                        [[[0.0, 1.0], [1.0, 0.0]]],
                                        lambda F, x, t, r: F.multilabel_soft_margin_loss(
                                            x, t, reduction=r)),
    "cosine_embedding_zero_vector": Case("cosine_embedding_loss",
                                         [[[0.0, 0.0], [1.0, 2.0]], [[1.0, 1.0], [0.0, 0.0]]],
                                         [[1.0, -1.0]],
                                         lambda F, a, b, t, r: F.cosine_embedding_loss(
                                             a, b, t, reduction=r)),
    "triplet_zero_distance": Case("triplet_margin_loss",
                                  [[[1.0, 2.0]], [[1.0, 2.0]], [[1.0, 2.0]]], [],
                                  lambda F, a, p, n, r: F.triplet_margin_loss(a, p, n,
                                                                              reduction=r)),
    "triplet_distance_zero_distance": Case(
        "triplet_margin_with_distance_loss", [[[1.0, 2.0]], [[1.0, 2.0]], [[3.0, 2.0]]], [],
        lambda F, a, p, n, r: F.triplet_margin_with_distance_loss(a, p, n, reduction=r)),
    "ctc_impossible": Case("ctc_loss", [np.log(np.full((2, 1, 3), 1 / 3)).tolist()],
                           [[[1, 2, 1]], [2], [3]],
                           lambda F, x, t, il, tl, r: F.ctc_loss(x, t.long(), il.long(),
                                                                 tl.long(), reduction=r)),
    "ctc_impossible_zero_infinity": Case(
        "ctc_loss", [np.log(np.full((2, 1, 3), 1 / 3)).tolist()], [[[1, 2, 1]], [2], [3]],
        lambda F, x, t, il, tl, r: F.ctc_loss(x, t.long(), il.long(), tl.long(),
                                              reduction=r, zero_infinity=True)),
}


def _evaluate(lib: Any, F: Any, case: Case, reduction: str) -> tuple[np.ndarray, list[Any]]:
    inputs = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in case.inputs]
    others = [lib.tensor(v, dtype=lib.float64) for v in case.others]
    out = case.call(F, *inputs, *others, reduction)
    out.sum().backward()
    value = out.detach().numpy()
    grads = [None if t.grad is None else t.grad.numpy() for t in inputs]
    return value, grads


def _same(ours: Any, theirs: Any, what: str) -> None:
    if theirs is None:
        assert ours is None or not np.any(ours), what
        return
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
    assert ours.shape == theirs.shape, what
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=f"{what}: NaN")
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(theirs), err_msg=f"{what}: inf")
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(theirs), err_msg=f"{what}: -inf")
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=1e-7, atol=1e-9, err_msg=what)


# Where pullback differs on purpose: the case, why, and pullback's exact answer (reduction
# "none": the value, then the gradient of the first input).
DIFFERENCES: dict[str, tuple[str, list[float], list[float]]] = {
    # PyTorch evaluates log(1 + exp(1000)) and overflows to inf, then its gradient to
    # inf / inf = NaN; pullback's softplus is exact there
    "soft_margin_huge": ("exact softplus", [1000.0, 0.0, math.log(2.0)], [1.0, 0.0, -0.5]),
    # an impossible alignment's loss is inf in both; PyTorch's gradient is NaN everywhere,
    # pullback's 0 (what zero_infinity=True gives in both), so one bad sample does not turn
    # every parameter into NaN
    "ctc_impossible": ("gradient 0, not NaN", [INF], [0.0] * 6),
}

PARAMS = [pytest.param(name, r, id=f"{name}-{r}") for name, case in CASES.items()
          for r in case.reductions if name not in DIFFERENCES]


@pytest.mark.parametrize("name, reduction", PARAMS)
def test_a_loss_at_the_edge_of_its_domain_matches_pytorch(name, reduction):
    case = CASES[name]
    with np.errstate(all="ignore"):
        ours = _evaluate(pullback, PF, case, reduction)
    theirs = _evaluate(torch, torch.nn.functional, case, reduction)
    _same(ours[0], theirs[0], f"{name} value")
    for i, (g, h) in enumerate(zip(ours[1], theirs[1])):
        _same(g, h, f"{name} gradient of input {i}")


@pytest.mark.parametrize("name", sorted(DIFFERENCES))
def test_where_pullback_differs_it_gives_the_documented_answer(name):
    _, value, gradient = DIFFERENCES[name]
    ours = _evaluate(pullback, PF, CASES[name], "none")
    theirs = _evaluate(torch, torch.nn.functional, CASES[name], "none")
    _same(ours[0], value, f"{name} value")
    _same(np.ravel(ours[1][0]), gradient, f"{name} gradient")
    assert np.isnan(np.ravel(theirs[1][0])).any(), "PyTorch now agrees: drop the difference"


def test_every_loss_has_boundary_cases():
    losses = {n for n in PF.__all__ if n.endswith("_loss")} | {
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "kl_div"}
    assert losses <= {case.loss for case in CASES.values()}
