"""Parity cases of the losses added for the porting work (margin, ranking, embedding, Poisson,
CTC; the legacy reduction flags; weighted regression losses), run by test_losses_more.py
through :func:`nn_parity.check_loss`."""

from __future__ import annotations

import numpy as np

from nn_parity import LossCase


def signs(rng, *shape):
    return np.where(rng.random(shape) > 0.5, 1.0, -1.0)


def pair_and_signs(*shape):
    return lambda r: [r.standard_normal(shape), r.standard_normal(shape), signs(r, *shape)]


def scores_and_signs(*shape):
    return lambda r: [r.standard_normal(shape) * 2, signs(r, *shape)]


def vectors_and_signs(n, d, scale=1.0):
    return lambda r: [r.standard_normal((n, d)) * scale, r.standard_normal((n, d)) * scale,
                      signs(r, n)]


def triplets(n, d):
    return lambda r: [r.standard_normal((n, d)), r.standard_normal((n, d)),
                      r.standard_normal((n, d))]


def multilabel(n, c):
    def make(rng):
        target = -np.ones((n, c), dtype=np.int64)
        for i in range(n):
            k = rng.integers(0, c)  # row 0 may get no target at all
            target[i, :k] = rng.choice(c, k, replace=False)
        target[-1, :3] = [2, 2, 0]  # a repeated class counts twice, as in PyTorch
        return [rng.standard_normal((n, c)), target]
    return make


def ctc_inputs(t=10, n=3, c=5, s=4, impossible=False):
    def make(rng):
        targets = rng.integers(1, c, (n, s))
        targets[0, 1] = targets[0, 0]  # a repeated label needs a blank between
        target_lengths = np.array([s, 2, 0][:n])
        input_lengths = np.array([t, t - 3, 4][:n])
        if impossible:
            input_lengths[0] = 3  # 4 labels, one repeated, cannot fit in 3 frames
        return [rng.standard_normal((t, n, c)), targets, input_lengths, target_lengths]
    return make


def ctc(**kwargs):
    """CTC on log_softmax of logits, as it is used (the gradients are compared on the logits:
    PyTorch's gradient with respect to log_probs themselves assumes that normalization)."""
    return lambda m, T: (lambda logits, *rest: m.CTCLoss(**kwargs)(
        m.functional.log_softmax(logits, -1), *rest))


W4 = np.array([0.5, 2.0, 1.0, 3.0])

CASES = [
    LossCase("MarginRankingLoss", lambda m, T: m.MarginRankingLoss(), pair_and_signs(6), (0, 1)),
    LossCase("MarginRankingLoss-margin-sum", lambda m, T: m.MarginRankingLoss(0.5,
                                                                              reduction="sum"),
             pair_and_signs(6), (0, 1)),
    LossCase("HingeEmbeddingLoss", lambda m, T: m.HingeEmbeddingLoss(), scores_and_signs(4, 3)),
    LossCase("HingeEmbeddingLoss-margin-none",
             lambda m, T: m.HingeEmbeddingLoss(margin=2.0, reduction="none"),
             scores_and_signs(4, 3)),
    LossCase("SoftMarginLoss", lambda m, T: m.SoftMarginLoss(), scores_and_signs(4, 3)),
    LossCase("SoftMarginLoss-none", lambda m, T: m.SoftMarginLoss(reduction="none"),
             scores_and_signs(5)),
    LossCase("MultiLabelSoftMarginLoss", lambda m, T: m.MultiLabelSoftMarginLoss(),
             lambda r: [r.standard_normal((5, 4)) * 3, (r.random((5, 4)) > 0.5).astype(float)]),
    LossCase("MultiLabelSoftMarginLoss-weight-none",
             lambda m, T: m.MultiLabelSoftMarginLoss(weight=T(W4), reduction="none"),
             lambda r: [r.standard_normal((5, 4)), (r.random((5, 4)) > 0.5).astype(float)]),
    LossCase("MultiLabelMarginLoss", lambda m, T: m.MultiLabelMarginLoss(), multilabel(5, 4)),
    LossCase("MultiLabelMarginLoss-none", lambda m, T: m.MultiLabelMarginLoss(reduction="none"),
             multilabel(4, 6)),
    LossCase("MultiLabelMarginLoss-1d", lambda m, T: m.MultiLabelMarginLoss(),
             lambda r: [r.standard_normal(4), np.array([3, 0, -1, 1])]),
    LossCase("MultiMarginLoss", lambda m, T: m.MultiMarginLoss(),
             lambda r: [r.standard_normal((6, 4)), r.integers(0, 4, 6)]),
    LossCase("MultiMarginLoss-p2-margin-weight-sum",
             lambda m, T: m.MultiMarginLoss(p=2, margin=0.7, weight=T(W4), reduction="sum"),
             lambda r: [r.standard_normal((6, 4)), r.integers(0, 4, 6)]),
    LossCase("MultiMarginLoss-none-1d", lambda m, T: m.MultiMarginLoss(reduction="none"),
             lambda r: [r.standard_normal(4), np.array(2)]),
    LossCase("CosineEmbeddingLoss", lambda m, T: m.CosineEmbeddingLoss(), vectors_and_signs(6, 4),
             (0, 1)),
    LossCase("CosineEmbeddingLoss-margin-none",
             lambda m, T: m.CosineEmbeddingLoss(margin=-0.2, reduction="none"),
             vectors_and_signs(6, 4), (0, 1)),
    LossCase("TripletMarginLoss", lambda m, T: m.TripletMarginLoss(), triplets(6, 4), (0, 1, 2)),
    LossCase("TripletMarginLoss-p1-swap-margin",
             lambda m, T: m.TripletMarginLoss(margin=2.0, p=1.0, swap=True, reduction="sum"),
             triplets(6, 4), (0, 1, 2)),
    LossCase("TripletMarginLoss-1d", lambda m, T: m.TripletMarginLoss(), triplets(1, 4),
             (0, 1, 2)),
    LossCase("TripletMarginWithDistanceLoss", lambda m, T: m.TripletMarginWithDistanceLoss(),
             triplets(6, 4), (0, 1, 2)),
    LossCase("TripletMarginWithDistanceLoss-cosine-swap",
             lambda m, T: m.TripletMarginWithDistanceLoss(
                 distance_function=lambda x, y: 1.0 - m.functional.cosine_similarity(x, y),
                 margin=0.5, swap=True, reduction="none"), triplets(6, 4), (0, 1, 2)),
    LossCase("PoissonNLLLoss", lambda m, T: m.PoissonNLLLoss(),
             lambda r: [r.standard_normal((4, 3)), r.poisson(2.0, (4, 3)).astype(float)], (0, 1)),
    LossCase("PoissonNLLLoss-rates-full",
             lambda m, T: m.PoissonNLLLoss(log_input=False, full=True, eps=1e-4),
             lambda r: [r.uniform(0.1, 4, (4, 3)), r.poisson(2.0, (4, 3)).astype(float)], (0,)),
    LossCase("PoissonNLLLoss-full-none", lambda m, T: m.PoissonNLLLoss(full=True,
                                                                       reduction="none"),
             lambda r: [r.standard_normal((4, 3)), r.poisson(3.0, (4, 3)).astype(float)], (0,)),
    LossCase("CTCLoss", ctc(), ctc_inputs()),
    LossCase("CTCLoss-sum-blank", ctc(blank=4, reduction="sum"),
             lambda r: [r.standard_normal((8, 2, 5)), r.integers(0, 4, (2, 3)), np.array([8, 6]),
                        np.array([3, 2])]),
    LossCase("CTCLoss-none", ctc(reduction="none"), ctc_inputs(t=12, n=3, c=6, s=5)),
    LossCase("CTCLoss-zero_infinity", ctc(zero_infinity=True), ctc_inputs(impossible=True)),
    LossCase("CTCLoss-concatenated-targets", ctc(),
             lambda r: [r.standard_normal((9, 3, 4)), r.integers(1, 4, 7), np.array([9, 7, 8]),
                        np.array([3, 2, 2])]),
    LossCase("CTCLoss-unbatched", ctc(),
             lambda r: [r.standard_normal((7, 4)), r.integers(1, 4, 3), np.array([7]),
                        np.array([3])]),
    # the deprecated reduction flags, weighted and broadcast regression losses
    LossCase("MSELoss-size_average-False", lambda m, T: m.MSELoss(size_average=False),
             lambda r: [r.standard_normal((4, 3)), r.standard_normal((4, 3))], (0, 1)),
    LossCase("CrossEntropyLoss-reduce-False", lambda m, T: m.CrossEntropyLoss(reduce=False),
             lambda r: [r.standard_normal((5, 4)), r.integers(0, 4, 5)]),
    LossCase("NLLLoss-size_average-False-weight",
             lambda m, T: m.NLLLoss(weight=T(W4), size_average=False),
             lambda r: [r.standard_normal((5, 4)), r.integers(0, 4, 5)]),
    LossCase("F.mse_loss-weight", lambda m, T: (lambda x, y, w: m.functional.mse_loss(
        x, y, weight=w)), lambda r: [r.standard_normal((4, 3)), r.standard_normal((4, 3)),
                                     r.random((4, 3))], (0, 1)),
    LossCase("F.l1_loss-weight-sum", lambda m, T: (lambda x, y, w: m.functional.l1_loss(
        x, y, reduction="sum", weight=w)), lambda r: [r.standard_normal((4, 3)),
                                                      r.standard_normal((4, 3)),
                                                      r.random((4, 3))], (0,)),
    LossCase("F.huber_loss-weight", lambda m, T: (lambda x, y, w: m.functional.huber_loss(
        x, y, delta=0.5, weight=w)), lambda r: [r.standard_normal((4, 3)),
                                                r.standard_normal((4, 3)), r.random((4, 3))],
        (0,)),
    LossCase("MSELoss-broadcast", lambda m, T: m.MSELoss(),
             lambda r: [r.standard_normal((4, 1)), r.standard_normal(4)], (0,)),
    LossCase("L1Loss-broadcast-none", lambda m, T: m.L1Loss(reduction="none"),
             lambda r: [r.standard_normal((3, 1)), r.standard_normal((1, 4))], (0,)),
]
