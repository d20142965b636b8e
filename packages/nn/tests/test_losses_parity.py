"""Every loss against PyTorch: value and gradients, float64 (1e-10) and float32, all options.

Each case builds the loss module from ``torch.nn`` and ``pullback.nn`` with the same call and
feeds both the same inputs; a case's id names the loss, its options and the dtype.
"""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.errors import DTypeError, IndexOutOfRangeError, ShapeError

from nn_parity import LossCase, check_loss

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")


def logits_and_classes(n=6, c=5, extra=(), ignore=None):
    def make(rng):
        target = rng.integers(0, c, (n,) + extra)
        if ignore is not None:
            target[::3] = ignore
        return [rng.standard_normal((n, c) + extra), target]
    return make


def logits_and_probs(n=6, c=5, extra=()):
    def make(rng):
        p = rng.random((n, c) + extra)
        return [rng.standard_normal((n, c) + extra), p / p.sum(axis=1, keepdims=True)]
    return make


def pair(*shape, positive_target=False):
    def make(rng):
        t = rng.random(shape) if positive_target else rng.standard_normal(shape)
        return [rng.standard_normal(shape), t]
    return make


def probs_and_labels(*shape):
    return lambda rng: [rng.uniform(0.02, 0.98, shape), (rng.random(shape) > 0.5).astype(float)]


def logits_and_labels(*shape, scale=3.0):
    return lambda rng: [rng.standard_normal(shape) * scale, rng.random(shape)]


def gaussian(shape, var_shape):
    return lambda rng: [rng.standard_normal(shape), rng.standard_normal(shape),
                        rng.uniform(0.1, 2.0, var_shape)]


W5 = np.array([0.5, 2.0, 1.0, 0.1, 3.0])

CASES = [
    LossCase("MSELoss", lambda m, T: m.MSELoss(), pair(4, 3), (0, 1)),
    LossCase("MSELoss-sum", lambda m, T: m.MSELoss(reduction="sum"), pair(4, 3)),
    LossCase("MSELoss-none", lambda m, T: m.MSELoss(reduction="none"), pair(4, 3)),
    LossCase("L1Loss", lambda m, T: m.L1Loss(), pair(4, 3), (0, 1)),
    LossCase("L1Loss-none", lambda m, T: m.L1Loss(reduction="none"), pair(4, 3)),
    LossCase("HuberLoss", lambda m, T: m.HuberLoss(), pair(5, 4), (0, 1)),
    LossCase("HuberLoss-delta-sum", lambda m, T: m.HuberLoss(reduction="sum", delta=0.3),
             pair(5, 4)),
    LossCase("SmoothL1Loss", lambda m, T: m.SmoothL1Loss(), pair(5, 4)),
    LossCase("SmoothL1Loss-beta-none", lambda m, T: m.SmoothL1Loss(reduction="none", beta=0.4),
             pair(5, 4)),
    LossCase("SmoothL1Loss-beta0", lambda m, T: m.SmoothL1Loss(beta=0.0), pair(5, 4)),
    LossCase("CrossEntropyLoss", lambda m, T: m.CrossEntropyLoss(), logits_and_classes()),
    LossCase("CrossEntropyLoss-sum", lambda m, T: m.CrossEntropyLoss(reduction="sum"),
             logits_and_classes()),
    LossCase("CrossEntropyLoss-none", lambda m, T: m.CrossEntropyLoss(reduction="none"),
             logits_and_classes()),
    LossCase("CrossEntropyLoss-weight", lambda m, T: m.CrossEntropyLoss(weight=T(W5)),
             logits_and_classes()),
    LossCase("CrossEntropyLoss-ignore_index", lambda m, T: m.CrossEntropyLoss(ignore_index=-100),
             logits_and_classes(ignore=-100)),
    LossCase("CrossEntropyLoss-ignore_index-class",
             lambda m, T: m.CrossEntropyLoss(ignore_index=2, weight=T(W5)),
             logits_and_classes(ignore=2)),
    LossCase("CrossEntropyLoss-label_smoothing",
             lambda m, T: m.CrossEntropyLoss(label_smoothing=0.2), logits_and_classes()),
    LossCase("CrossEntropyLoss-smoothing-weight-ignore-mean",
             lambda m, T: m.CrossEntropyLoss(weight=T(W5), ignore_index=-1, label_smoothing=0.1),
             logits_and_classes(ignore=-1)),
    LossCase("CrossEntropyLoss-smoothing-weight-ignore-none",
             lambda m, T: m.CrossEntropyLoss(weight=T(W5), ignore_index=-1, label_smoothing=0.3,
                                             reduction="none"), logits_and_classes(ignore=-1)),
    LossCase("CrossEntropyLoss-smoothing-sum",
             lambda m, T: m.CrossEntropyLoss(label_smoothing=0.3, reduction="sum"),
             logits_and_classes()),
    LossCase("CrossEntropyLoss-spatial", lambda m, T: m.CrossEntropyLoss(),
             logits_and_classes(n=2, c=5, extra=(3, 4))),
    LossCase("CrossEntropyLoss-spatial-none-weight",
             lambda m, T: m.CrossEntropyLoss(reduction="none", weight=T(W5)),
             logits_and_classes(n=2, c=5, extra=(3,))),
    LossCase("CrossEntropyLoss-unbatched", lambda m, T: m.CrossEntropyLoss(),
             lambda r: [r.standard_normal(5), np.array(3)]),
    LossCase("CrossEntropyLoss-probs", lambda m, T: m.CrossEntropyLoss(), logits_and_probs()),
    LossCase("CrossEntropyLoss-probs-weight-smoothing-sum",
             lambda m, T: m.CrossEntropyLoss(weight=T(W5), label_smoothing=0.2, reduction="sum"),
             logits_and_probs()),
    LossCase("CrossEntropyLoss-probs-spatial-none",
             lambda m, T: m.CrossEntropyLoss(reduction="none"), logits_and_probs(2, 5, (3,))),
    LossCase("CrossEntropyLoss-large-logits", lambda m, T: m.CrossEntropyLoss(),
             lambda r: [r.standard_normal((4, 5)) * 1000, r.integers(0, 5, 4)]),
    LossCase("NLLLoss", lambda m, T: m.NLLLoss(), logits_and_classes()),
    LossCase("NLLLoss-weight-ignore", lambda m, T: m.NLLLoss(weight=T(W5), ignore_index=-100),
             logits_and_classes(ignore=-100)),
    LossCase("NLLLoss-none-spatial", lambda m, T: m.NLLLoss(reduction="none"),
             logits_and_classes(n=2, extra=(3,))),
    LossCase("NLLLoss-sum", lambda m, T: m.NLLLoss(reduction="sum"), logits_and_classes()),
    LossCase("BCELoss", lambda m, T: m.BCELoss(), probs_and_labels(4, 3)),
    LossCase("BCELoss-weight-sum", lambda m, T: m.BCELoss(weight=T(np.array([1.0, 0.5, 2.0])),
                                                         reduction="sum"), probs_and_labels(4, 3)),
    LossCase("BCELoss-none-soft-targets", lambda m, T: m.BCELoss(reduction="none"),
             lambda r: [r.uniform(0.05, 0.95, (4, 3)), r.random((4, 3))]),
    LossCase("BCEWithLogitsLoss", lambda m, T: m.BCEWithLogitsLoss(), logits_and_labels(4, 3),
             (0, 1)),
    LossCase("BCEWithLogitsLoss-large", lambda m, T: m.BCEWithLogitsLoss(),
             logits_and_labels(4, 3, scale=60.0)),
    LossCase("BCEWithLogitsLoss-pos_weight",
             lambda m, T: m.BCEWithLogitsLoss(pos_weight=T(np.array([3.0, 0.5, 1.0]))),
             logits_and_labels(4, 3)),
    LossCase("BCEWithLogitsLoss-weight-pos_weight-none",
             lambda m, T: m.BCEWithLogitsLoss(weight=T(np.array([2.0, 1.0, 0.3])),
                                              pos_weight=T(np.array([3.0, 0.5, 1.0])),
                                              reduction="none"), logits_and_labels(4, 3)),
    LossCase("BCEWithLogitsLoss-zero-logits", lambda m, T: m.BCEWithLogitsLoss(),
             lambda r: [np.zeros((3, 2)), r.random((3, 2))]),
    LossCase("KLDivLoss-batchmean", lambda m, T: m.KLDivLoss(reduction="batchmean"),
             lambda r: [np.log(r.dirichlet(np.ones(4), 5)), r.dirichlet(np.ones(4), 5)], (0, 1)),
    LossCase("KLDivLoss-sum-zero-targets", lambda m, T: m.KLDivLoss(reduction="sum"),
             lambda r: [r.standard_normal((3, 4)), np.array([[0.0, 0.5, 0.5, 0.0]] * 3)]),
    LossCase("KLDivLoss-none", lambda m, T: m.KLDivLoss(reduction="none"),
             lambda r: [r.standard_normal((3, 4)), r.random((3, 4))]),
    LossCase("KLDivLoss-mean", lambda m, T: m.KLDivLoss(reduction="mean"),
             lambda r: [r.standard_normal((3, 4)), r.random((3, 4))]),
    LossCase("KLDivLoss-log_target", lambda m, T: m.KLDivLoss(reduction="batchmean",
                                                              log_target=True),
             lambda r: [r.standard_normal((3, 4)), r.standard_normal((3, 4))], (0, 1)),
    LossCase("GaussianNLLLoss", lambda m, T: m.GaussianNLLLoss(), gaussian((5, 3), (5, 3)),
             (0, 1, 2)),
    LossCase("GaussianNLLLoss-full-sum", lambda m, T: m.GaussianNLLLoss(full=True, reduction="sum"),
             gaussian((5, 3), (5, 3)), (0, 2)),
    LossCase("GaussianNLLLoss-one-var-per-row", lambda m, T: m.GaussianNLLLoss(reduction="none"),
             gaussian((5, 3), (5, 1)), (0, 2)),
    LossCase("GaussianNLLLoss-var-missing-last-axis", lambda m, T: m.GaussianNLLLoss(),
             gaussian((5, 3), (5,)), (0, 2)),
    LossCase("GaussianNLLLoss-clamped-var", lambda m, T: m.GaussianNLLLoss(eps=0.5),
             gaussian((5, 3), (5, 3)), (0, 2)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_loss_matches_torch(case, dtype):
    check_loss(case, dtype, torch)


def test_cross_entropy_all_ignored_is_nan_like_torch():
    logits = pullback.randn(3, 4, dtype="float64")
    target = pullback.tensor([-100, -100, -100])
    value = nn.functional.cross_entropy(logits, target).item()
    t_value = torch.nn.functional.cross_entropy(torch.tensor(np.asarray(logits)),
                                                torch.tensor([-100] * 3)).item()
    assert np.isnan(value) and np.isnan(t_value)


def test_cross_entropy_bad_target_names_the_class_count():
    with pytest.raises(IndexOutOfRangeError, match="target 7 is out of range for 5 classes"):
        nn.functional.cross_entropy(pullback.randn(2, 5), pullback.tensor([1, 7]))
    with pytest.raises(ShapeError, match=r"needs a target of shape \(2,\)"):
        nn.functional.cross_entropy(pullback.randn(2, 5), pullback.tensor([1, 2, 3]))


@pytest.mark.parametrize("logits_shape, target", [((4, 3), [0.0, 1.0, 2.0, 1.0]), ((3,), 1.0),
                                                   ((2, 3, 5), [[0.0] * 5, [1.0] * 5])])
def test_cross_entropy_with_float_class_indices_says_the_dtype_is_wrong(logits_shape, target):
    logits = pullback.randn(*logits_shape)
    with pytest.raises(DTypeError, match="holds class indices, which must be integers") as info:
        nn.functional.cross_entropy(logits, pullback.tensor(target))
    assert f"got float32; class probabilities would have the input's shape {logits_shape}" in str(
        info.value)
    with pytest.raises(RuntimeError, match="target dtype"):  # PyTorch refuses them too
        torch.nn.functional.cross_entropy(torch.randn(*logits_shape), torch.tensor(target))


def test_loss_shape_and_option_errors():
    with pytest.raises(ShapeError, match="mse_loss"):
        nn.MSELoss()(pullback.randn(3), pullback.randn(4))
    with pytest.raises(ValueError, match="reduction"):
        nn.L1Loss(reduction="avg")(pullback.randn(3), pullback.randn(3))
    with pytest.raises(ValueError, match="probabilities"):
        nn.BCELoss()(pullback.tensor([1.5]), pullback.tensor([1.0]))
    with pytest.raises(ValueError, match="negative"):
        nn.GaussianNLLLoss()(pullback.randn(2, 2), pullback.randn(2, 2), -pullback.ones(2, 2))
    with pytest.raises(ShapeError, match="var"):
        nn.GaussianNLLLoss()(pullback.randn(2, 3), pullback.randn(2, 3), pullback.ones(3, 2))
