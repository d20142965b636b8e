"""Every registered surrogate: the spike op's gradient is the derivative of the surrogate's smooth
step (closed forms below, by finite differences), its second derivative passes gradgradcheck,
and the four snnTorch also has match snnTorch's own functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback
from pullback import spanda
from pullback.spanda import surrogate
from pullback.testing import gradgradcheck

# The smooth steps whose derivatives the surrogates are (closed forms, written independently).
STEPS = {
    "fast_sigmoid": lambda x, slope=25.0: x / (1.0 + slope * np.abs(x)),
    "arctan": lambda x, alpha=2.0: np.arctan(np.pi / 2 * alpha * x) / np.pi,
    "sigmoid": lambda x, slope=25.0: 1.0 / (1.0 + np.exp(-slope * x)),
    "gaussian": lambda x, sigma=0.5: 0.5 * (1.0 + np.vectorize(math.erf)(x / (sigma * math.sqrt(2)))),
    "triangle": lambda x, width=1.0: np.where(
        np.abs(x) < width, x / width - np.sign(x) * x * x / (2 * width * width),
        0.5 * np.sign(x)),
    "straight_through": lambda x: x,
}
NAMES = sorted(surrogate.SURROGATES)
# Parameters other than the defaults, so that each one is seen to act.
OTHER_PARAMS = {"fast_sigmoid": {"slope": 5.0}, "arctan": {"alpha": 3.0}, "sigmoid": {"slope": 4.0},
                "gaussian": {"sigma": 0.8}, "triangle": {"width": 0.7}, "straight_through": {}}


def test_every_registered_surrogate_has_a_closed_form_here() -> None:
    assert set(STEPS) == set(NAMES) == set(OTHER_PARAMS)


def _points(seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, 40)
    # Away from the triangle's kinks (0 and +-width) and from the step itself.
    return x[np.min(np.abs(x[:, None] - np.array([0.0, 0.7, -0.7, 1.0, -1.0])), axis=1) > 1e-3]


@pytest.mark.parametrize("params", ["default", "other"])
@pytest.mark.parametrize("name", NAMES)
def test_spike_gradient_is_the_derivative_of_the_smooth_step(name: str, params: str) -> None:
    kwargs = {} if params == "default" else OTHER_PARAMS[name]
    sg = surrogate.SURROGATES[name](**kwargs)
    threshold = 0.3
    u = pullback.tensor(_points() + threshold, dtype=pullback.float64, requires_grad=True)
    thr = pullback.tensor(threshold, dtype=pullback.float64, requires_grad=True)
    spikes = spanda.functional.spike(u, thr, surrogate=sg)
    weights = np.random.default_rng(1).standard_normal(u.shape)
    (spikes * pullback.tensor(weights)).sum().backward()

    eps = 1e-6
    x = u.detach().numpy() - threshold
    numerical = (STEPS[name](x + eps, **kwargs) - STEPS[name](x - eps, **kwargs)) / (2 * eps)
    np.testing.assert_allclose(u.grad.numpy(), weights * numerical, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(thr.grad.item(), -(weights * numerical).sum(), rtol=1e-6)
    np.testing.assert_array_equal(spikes.detach().numpy(), (x > 0).astype(np.float64))


@pytest.mark.parametrize("name", NAMES)
def test_second_derivative_passes_gradgradcheck(name: str) -> None:
    sg = surrogate.SURROGATES[name](**OTHER_PARAMS[name])
    u = pullback.tensor(_points(2)[:12], dtype=pullback.float64, requires_grad=True)
    thr = pullback.tensor(0.1, dtype=pullback.float64, requires_grad=True)
    assert gradgradcheck(lambda a, b: spanda.functional.spike(a + 0.1, b, surrogate=sg), (u, thr))


def test_a_membrane_exactly_at_the_threshold_does_not_fire() -> None:
    u = pullback.tensor([0.999, 1.0, 1.001])
    assert spanda.functional.spike(u, 1.0).tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize("name", ["fast_sigmoid", "arctan", "sigmoid", "straight_through"])
def test_surrogate_gradients_match_snntorch(name: str) -> None:
    torch = pytest.importorskip("torch")
    snn_surrogate = pytest.importorskip("snntorch.surrogate")
    theirs = {"fast_sigmoid": snn_surrogate.fast_sigmoid(slope=5.0),
              "arctan": snn_surrogate.atan(alpha=3.0),
              "sigmoid": snn_surrogate.sigmoid(slope=4.0),
              "straight_through": snn_surrogate.straight_through_estimator()}[name]
    x = np.linspace(-2.0, 2.0, 101)
    tx = torch.tensor(x, requires_grad=True)
    theirs(tx).sum().backward()
    px = pullback.tensor(x, requires_grad=True)
    ours = surrogate.SURROGATES[name](**OTHER_PARAMS[name])
    spikes = ours(px)  # snnTorch's spike_grad(mem - threshold) spelling
    spikes.sum().backward()
    # rtol: our sigmoid uses another (stable) form of the same function.
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(spikes.detach().numpy(), (x > 0).astype(np.float64))


def test_sigmoid_stays_finite_where_snntorch_overflows() -> None:
    x = pullback.tensor([-10.0, -4.0, 10.0], requires_grad=True)  # float32
    spanda.functional.spike(x, 0.0, surrogate.sigmoid(slope=25)).sum().backward()
    assert np.all(np.isfinite(x.grad.numpy()))


def test_lookup_by_name_default_and_errors() -> None:
    assert surrogate.get(None) == surrogate.ArcTan(alpha=2.0)
    assert surrogate.get("fast_sigmoid") == surrogate.fast_sigmoid(slope=25)
    sg = surrogate.gaussian(sigma=0.2)
    assert surrogate.get(sg) is sg
    assert repr(surrogate.triangle(width=0.5)) == "Triangle(width=0.5)"
    assert surrogate.fast_sigmoid(slope=5) != surrogate.fast_sigmoid(slope=6)
    assert len({surrogate.arctan(), surrogate.arctan(alpha=2.0)}) == 1
    with pytest.raises(ValueError, match=r"unknown surrogate 'fast_sigmod'; registered: arctan, "):
        surrogate.get("fast_sigmod")
    with pytest.raises(TypeError, match="surrogate must be a name"):
        surrogate.get(3)
    with pytest.raises(ValueError, match=r"FastSigmoid: slope must be a positive finite number, "
                                         r"got -1.0"):
        surrogate.fast_sigmoid(slope=-1)
    with pytest.raises(ValueError, match="Gaussian: sigma"):
        surrogate.gaussian(sigma=0)


def test_a_third_party_surrogate_registers_and_trains_a_neuron() -> None:
    @surrogate.register("test_boxcar")
    class Boxcar(surrogate.Surrogate):
        params = ("half_width",)

        def __init__(self, half_width: float = 0.5) -> None:
            self.half_width = half_width

        def derivative(self, F, x):
            return F.where(F.less(abs(x), self.half_width), 1.0 / (2 * self.half_width), 0.0)

    try:
        with pytest.raises(ValueError, match="already registered"):
            surrogate.register("test_boxcar")(surrogate.Triangle)
        lif = spanda.LIF(0.5, surrogate="test_boxcar")
        x = pullback.tensor([[0.8, 2.5]], requires_grad=True)
        spk, mem = lif(x)
        spk.sum().backward()
        assert x.grad.tolist() == [[1.0, 0.0]]  # |0.8 - 1| < 0.5, |2.5 - 1| is not
    finally:
        del surrogate.SURROGATES["test_boxcar"]
