"""The DistributionalTensor API, propagate's registry, the loss and the bad-input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback as pb
from pullback import nn
from pullback import pramana as pr
from pullback.errors import DTypeError, ShapeError


def _dt(shape=(2, 3), seed=0):
    rng = np.random.default_rng(seed)
    return pr.DistributionalTensor(pb.tensor(rng.normal(size=shape)),
                                   pb.tensor(rng.uniform(0.1, 1.0, shape)))


def test_negative_variance_is_refused_with_its_value():
    with pytest.raises(ValueError, match="non-negative.*-0.5"):
        pr.DistributionalTensor(pb.zeros(2), pb.tensor([0.1, -0.5]))


def test_mean_and_var_shapes_must_agree():
    with pytest.raises(ShapeError, match=r"\(2,\).*\(3,\)"):
        pr.DistributionalTensor(pb.zeros(2), pb.ones(3))


def test_integer_or_mixed_dtypes_are_refused():
    with pytest.raises(DTypeError):
        pr.DistributionalTensor(pb.tensor([1, 2]), pb.tensor([1, 1]))
    with pytest.raises(DTypeError):
        pr.DistributionalTensor(pb.zeros(2, dtype=pb.float32), pb.zeros(2, dtype=pb.float64))


def test_a_layer_without_a_moment_rule_is_named():
    model = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3)).double()
    with pytest.raises(NotImplementedError, match="LayerNorm.*register_moment_rule"):
        pr.propagate(model, _dt((2, 3)))


def test_batch_norm_in_training_mode_is_refused():
    with pytest.raises(NotImplementedError, match="training mode.*eval"):
        pr.propagate(nn.BatchNorm1d(3), _dt((4, 3)))


def test_a_registered_rule_extends_propagate():
    class Double(nn.Module):
        def forward(self, x):
            return 2 * x

    pr.register_moment_rule(Double)(lambda module, x: 2.0 * x)
    try:
        y = pr.propagate(nn.Sequential(Double()), _dt())
        np.testing.assert_allclose(y.var.numpy(), 4 * _dt().var.numpy())
    finally:
        del pr._propagate.MOMENT_RULES[Double]


def test_division_by_a_distribution_and_unknown_methods_are_refused():
    x = _dt()
    with pytest.raises(TypeError, match="ratio of Gaussians"):
        x / x
    with pytest.raises(ValueError, match="method"):
        pr.functional.smooth("tanh", x, "unscented")
    with pytest.raises(ValueError, match="known"):
        pr.functional.smooth("mish", x)


def test_a_point_mass_passes_through_like_the_deterministic_model():
    pb.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5, dtype=pb.float64), nn.ReLU(), nn.Linear(5, 2, dtype=pb.float64),
                          nn.Tanh())
    x = pb.randn(3, 4, dtype=pb.float64)
    y = pr.propagate(model, x)
    np.testing.assert_allclose(y.mean.detach().numpy(), model(x).detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    # Zero up to rounding (quadrature sums weights that add to 1 within an ulp).
    np.testing.assert_allclose(y.var.detach().numpy(), np.zeros((3, 2)), rtol=0, atol=1e-30)


def test_propagate_shares_the_models_parameters_for_training():
    pb.manual_seed(1)
    model = nn.Sequential(nn.Linear(3, 4, dtype=pb.float64), nn.ReLU(), nn.Linear(4, 1, dtype=pb.float64))
    y = pr.propagate(model, _dt((5, 3)))
    (y.mean.sum() + y.var.sum()).backward()
    assert all(p.grad is not None and float(np.abs(p.grad.numpy()).sum()) > 0
               for p in model.parameters())


def test_distributional_layers_keep_nn_state_dict_keys():
    ours = pr.DistributionalLinear(3, 2)
    assert set(ours.state_dict()) == set(nn.Linear(3, 2).state_dict())
    bayes = pr.DistributionalLinear(3, 2, weight_distribution="gaussian")
    assert set(bayes.state_dict()) == {"weight", "bias", "weight_log_var", "bias_log_var"}


def test_gaussian_kl_matches_torch_distributions():
    torch = pytest.importorskip("torch")
    pb.manual_seed(2)
    layer = pr.DistributionalLinear(4, 3, weight_distribution="gaussian", prior_var=0.5,
                                    init_log_var=-1.0, dtype=pb.float64)
    layer.weight_log_var.data.copy_(pb.tensor(np.random.default_rng(0).normal(-1, 0.3, (3, 4))))
    q_w = torch.distributions.Normal(torch.tensor(layer.weight.detach().numpy()),
                                     torch.tensor(np.exp(0.5 * layer.weight_log_var.detach().numpy())))
    q_b = torch.distributions.Normal(torch.tensor(layer.bias.detach().numpy()),
                                     torch.tensor(np.exp(0.5 * layer.bias_log_var.detach().numpy())))
    prior = torch.distributions.Normal(torch.tensor(0.0, dtype=torch.float64),
                                       torch.tensor(math.sqrt(0.5), dtype=torch.float64))
    expected = (torch.distributions.kl_divergence(q_w, prior).sum()
                + torch.distributions.kl_divergence(q_b, prior).sum()).item()
    assert layer.kl().item() == pytest.approx(expected, rel=1e-12)
    assert pr.DistributionalLinear(4, 3).kl().item() == 0.0


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_gaussian_nll_matches_torch(full, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    mean, target = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    var = rng.uniform(0.0, 1.0, (5, 2))
    var[0, 0] = 1e-9  # below eps: clamped for the value
    m = pb.tensor(mean, requires_grad=True)
    v = pb.tensor(var, requires_grad=True)
    ours = pr.GaussianNLLLoss(full=full, reduction=reduction)(pr.DistributionalTensor(m, v),
                                                               pb.tensor(target))
    tm = torch.tensor(mean, requires_grad=True)
    tv = torch.tensor(var, requires_grad=True)
    theirs = torch.nn.GaussianNLLLoss(full=full, reduction=reduction)(tm, torch.tensor(target), tv)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), tm.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(v.grad.numpy(), tv.grad.numpy(), rtol=1e-10)


def test_loss_refuses_two_variances():
    with pytest.raises(TypeError, match="carries its variance"):
        pr.GaussianNLLLoss()(_dt(), pb.zeros(2, 3), pb.ones(2, 3))


def test_arithmetic_with_constants_and_shapes():
    x = _dt((2, 3))
    y = x + pb.ones(3)
    assert y.shape == (2, 3)
    z = x + pb.ones(4, 2, 3)  # broadcast: the variance follows the result's shape
    assert z.var.shape == (4, 2, 3)
    np.testing.assert_allclose((x - 1.0).var.numpy(), x.var.numpy())
    np.testing.assert_allclose((-x).mean.numpy(), -x.mean.numpy())
    np.testing.assert_allclose(x.sum(1).var.numpy(), x.var.numpy().sum(1))
    np.testing.assert_allclose(x.mean_over(1).var.numpy(), x.var.numpy().sum(1) / 9)
    assert x[0].shape == (3,) and x.reshape(3, 2).shape == (3, 2) and x.flatten().shape == (6,)


def test_a_tensor_on_the_left_defers_to_the_distribution():
    # Tensor's operators return NotImplemented for a DistributionalTensor, so its reflected
    # operators run: the same moments as with the tensor on the right.
    x = _dt((2, 3))
    t = pb.tensor(np.random.default_rng(4).normal(size=(2, 3)))
    w = pb.tensor(np.random.default_rng(5).normal(size=(4, 2)))
    for got, want in [(t + x, x + t), (t * x, x * t), (t - x, -(x - t))]:
        assert isinstance(got, pr.DistributionalTensor)
        np.testing.assert_allclose(got.mean.numpy(), want.mean.numpy(), rtol=1e-12)
        np.testing.assert_allclose(got.var.numpy(), want.var.numpy(), rtol=1e-12)
    left = w @ x  # deterministic weights on the left: variance through their squares
    assert isinstance(left, pr.DistributionalTensor)
    np.testing.assert_allclose(left.var.numpy(), (w * w).numpy() @ x.var.numpy(), rtol=1e-12)
