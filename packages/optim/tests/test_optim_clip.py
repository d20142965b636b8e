"""clip_grad_norm_ and clip_grad_value_ against torch.nn.utils."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback
from pullback.optim import HyperparameterError, NonFiniteNormError, clip_grad_norm_, clip_grad_value_

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these tests")

SHAPES = [(4, 5), (7,), (2, 3, 2)]


def with_grads(grads: list[np.ndarray]):
    """The same parameters with the same gradients in pullback and in PyTorch (a fourth
    parameter has no gradient in both)."""
    ours, theirs = [], []
    for g in grads:
        p = pullback.zeros(*g.shape, dtype=g.dtype, requires_grad=True)
        p.grad = pullback.tensor(g)
        t = torch.zeros(g.shape, dtype=torch.float64, requires_grad=True)
        t.grad = torch.tensor(g)
        ours.append(p)
        theirs.append(t)
    ours.append(pullback.zeros(3, requires_grad=True))
    theirs.append(torch.zeros(3, requires_grad=True))
    return ours, theirs


def random_grads(seed: int = 0, scale: float = 1.0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) * scale for s in SHAPES]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.5, 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e4])
def test_clip_grad_norm_matches_pytorch(norm_type: float, max_norm: float):
    ours, theirs = with_grads(random_grads())
    total = clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert isinstance(total, pullback.Tensor) and total.shape == ()
    assert float(total) == pytest.approx(float(expected), rel=1e-13)
    for p, t in zip(ours, theirs):
        if t.grad is None:
            assert p.grad is None
        else:
            np.testing.assert_allclose(p.grad.array, t.grad.numpy(), rtol=1e-13, atol=0)
    if max_norm < float(expected):
        clipped = np.linalg.norm(np.concatenate([p.grad.array.ravel() for p in ours[:3]]),
                                 norm_type if norm_type != math.inf else np.inf)
        assert clipped == pytest.approx(max_norm, rel=1e-5)


def test_clip_grad_norm_accepts_one_tensor_and_float32():
    p = pullback.zeros(3, requires_grad=True)
    p.grad = pullback.tensor([3.0, 4.0, 0.0])
    total = clip_grad_norm_(p, 1.0)
    assert total.dtype == np.float32 and float(total) == 5.0
    np.testing.assert_allclose(p.grad.array, [0.6, 0.8, 0.0], rtol=1e-6)


def test_clip_grad_norm_without_gradients_returns_zero():
    assert float(clip_grad_norm_([pullback.zeros(2, requires_grad=True)], 1.0)) == 0.0


def test_nonfinite_norm_raises_when_asked_and_spreads_nan_otherwise():
    grads = random_grads()
    grads[1][2] = np.nan
    ours, theirs = with_grads(grads)
    with pytest.raises(NonFiniteNormError, match="total norm of order 2.0 .* is nan"):
        clip_grad_norm_(ours, 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError):
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, error_if_nonfinite=True)
    total = clip_grad_norm_(ours, 1.0)
    torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert math.isnan(float(total))
    for p, t in zip(ours[:3], theirs[:3]):
        np.testing.assert_array_equal(np.isnan(p.grad.array), np.isnan(t.grad.numpy()))


def test_clipping_bumps_the_version_of_the_gradient():
    p = pullback.zeros(2, requires_grad=True)
    p.grad = pullback.tensor([30.0, 40.0])
    before = p.grad._version[0]
    clip_grad_norm_([p], 1.0)
    assert p.grad._version[0] == before + 1


@pytest.mark.parametrize("clip_value", [0.3, 0.0, 5.0])
def test_clip_grad_value_matches_pytorch(clip_value: float):
    ours, theirs = with_grads(random_grads(seed=1))
    assert clip_grad_value_(ours, clip_value) is None
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    for p, t in zip(ours[:3], theirs[:3]):
        np.testing.assert_array_equal(p.grad.array, t.grad.numpy())


def test_bad_clipping_arguments():
    p = pullback.zeros(2, requires_grad=True)
    p.grad = pullback.ones(2)
    with pytest.raises(HyperparameterError, match="clip_value must be >= 0, got -1.0"):
        clip_grad_value_([p], -1.0)
    with pytest.raises(HyperparameterError, match="norm_type must be > 0, got 0.0"):
        clip_grad_norm_([p], 1.0, norm_type=0)
    with pytest.raises(TypeError, match="parameter 1 is ndarray, not a Tensor"):
        clip_grad_norm_([p, np.ones(2)], 1.0)
