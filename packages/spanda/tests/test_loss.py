"""The losses against snnTorch's: values and gradients (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import spanda
from pullback.errors import ShapeError

torch = pytest.importorskip("torch")
SF = pytest.importorskip("snntorch.functional")

T, B, C = 20, 6, 4


def _outputs(kind: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    if kind == "spikes":
        return (rng.random((T, B, C)) < 0.3).astype(np.float64)
    return rng.standard_normal((T, B, C))


CASES = {
    "spike_count_cross_entropy": ("spikes", lambda: SF.ce_count_loss(), {}, 1.0),
    "rate_cross_entropy": ("membrane", lambda: SF.ce_rate_loss(), {}, 1.0),
    "max_membrane_cross_entropy": ("membrane", lambda: SF.ce_max_membrane_loss(), {}, 1.0),
    # snnTorch makes its targets in float32 and clamps them at off_target from below (a negative
    # one would become 0): values exact in float32, off_target >= 0.
    "membrane_mse": ("membrane", lambda: SF.mse_membrane_loss(on_target=1.5, off_target=0.25),
                     {"on_target": 1.5, "off_target": 0.25}, 1.0),
    # snnTorch compares counts with int(T * rate) and divides by T once: T times ours.
    "rate_mse": ("spikes", lambda: SF.mse_count_loss(correct_rate=0.75, incorrect_rate=0.25),
                 {"correct_rate": 0.75, "incorrect_rate": 0.25}, float(T)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_and_gradient_match_snntorch(name: str) -> None:
    kind, theirs_fn, options, scale = CASES[name]
    out = _outputs(kind)
    targets = np.random.default_rng(1).integers(0, C, B)
    t_out = torch.tensor(out, requires_grad=True)
    theirs = theirs_fn()(t_out, torch.tensor(targets))
    theirs.sum().backward()
    p_out = pullback.tensor(out, requires_grad=True)
    ours = getattr(spanda.loss, name)(p_out, pullback.tensor(targets), **options)
    ours.backward()
    # snnTorch sums per-step losses into a float32 accumulator (value and gradient).
    rtol = 1e-6 if name in ("membrane_mse", "rate_cross_entropy") else 1e-10
    np.testing.assert_allclose(ours.item() * scale, theirs.item(), rtol=rtol)
    np.testing.assert_allclose(p_out.grad.numpy() * scale, t_out.grad.numpy(), rtol=rtol,
                               atol=1e-14)


def test_losses_name_bad_shapes() -> None:
    with pytest.raises(ShapeError, match=r"rate_mse: expected outputs \(T, B, classes\)"):
        spanda.loss.rate_mse(pullback.rand(4, 3), pullback.tensor([0, 1, 2, 0]))
    with pytest.raises(ShapeError, match=r"spike_count_cross_entropy: expected targets of "
                                         r"shape \(3,\)"):
        spanda.loss.spike_count_cross_entropy(pullback.rand(5, 3, 2), pullback.tensor([0, 1]))
