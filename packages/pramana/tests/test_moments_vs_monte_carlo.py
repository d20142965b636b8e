"""Every layer's output mean and variance against 100,000-sample Monte Carlo through the
ordinary deterministic layer. Exact layers must land within sampling error; approximate ones
within the error measured for them and stated in docs/pramana.md."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pramana_mc import assert_within_sampling_error, monte_carlo, relative_discrepancy

import pullback as pb
from pullback import nn
from pullback import pramana as pr
from pullback.nn import functional as F


def _input(shape, seed=0, var_range=(0.05, 0.6)):
    rng = np.random.default_rng(seed)
    mean = rng.normal(0.0, 1.0, shape)
    var = rng.uniform(*var_range, shape)
    return pr.DistributionalTensor(pb.tensor(mean), pb.tensor(var))


def _seeded(layer, seed=1):
    pb.manual_seed(seed)
    return layer


def test_rectified_standard_gaussian_has_the_textbook_moments():
    y = pr.functional.relu(pr.DistributionalTensor(pb.zeros(1, dtype=pb.float64),
                                                   pb.ones(1, dtype=pb.float64)))
    assert y.mean.item() == pytest.approx(1 / math.sqrt(2 * math.pi), rel=1e-14)  # 0.398942
    assert y.var.item() == pytest.approx(0.5 - 1 / (2 * math.pi), rel=1e-14)  # 0.340845


EXACT = {
    "linear": lambda: pb.nn.Linear(6, 4, dtype=pb.float64),
    "linear_no_bias": lambda: pb.nn.Linear(6, 4, bias=False, dtype=pb.float64),
    "relu": nn.ReLU,
    "leaky_relu": lambda: nn.LeakyReLU(0.1),
    "flatten": nn.Flatten,
}


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_layers_match_monte_carlo(name):
    pb.manual_seed(3)
    layer = EXACT[name]()
    x = _input((3, 6))
    assert_within_sampling_error(pr.propagate(layer, x), monte_carlo(layer, x))


def test_conv2d_matches_monte_carlo():
    pb.manual_seed(4)
    conv = nn.Conv2d(2, 3, 3, stride=1, padding=1, dtype=pb.float64)
    x = _input((2, 2, 5, 5))
    assert_within_sampling_error(pr.propagate(conv, x), monte_carlo(conv, x, samples=50_000))


def test_avg_pool_with_every_counting_option_matches_monte_carlo():
    x = _input((2, 2, 5, 5))
    for include, ceil, divisor in ((True, False, None), (False, False, None), (False, True, None),
                                   (True, True, 4)):
        pool = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=ceil, count_include_pad=include,
                            divisor_override=divisor)
        assert_within_sampling_error(pr.propagate(pool, x), monte_carlo(pool, x, samples=50_000))


def test_dropout_variance_injection_matches_monte_carlo_dropout():
    x = _input((4, 5))
    p = 0.3

    def mc_dropout(t):
        # Inverted dropout with fresh masks per draw, as nn.Dropout in training mode.
        return F.dropout(t, p, training=True)

    pb.manual_seed(5)
    assert_within_sampling_error(pr.functional.dropout(x, p), monte_carlo(mc_dropout, x))


def test_batch_norm_in_eval_mode_is_affine_and_exact():
    pb.manual_seed(6)
    bn = nn.BatchNorm2d(2, dtype=pb.float64)
    bn(pb.randn(8, 2, 3, 3, dtype=pb.float64) * 3 + 1)  # running statistics move
    bn.eval()
    x = _input((2, 2, 3, 3))
    assert_within_sampling_error(pr.propagate(bn, x), monte_carlo(bn, x))


def test_bayesian_linear_matches_sampling_the_weights_too():
    pb.manual_seed(7)
    layer = pr.DistributionalLinear(5, 3, weight_distribution="gaussian", init_log_var=-2.0,
                                    dtype=pb.float64)
    x = _input((2, 5))
    w_sd = np.sqrt(np.exp(layer.weight_log_var.detach().numpy()))
    b_sd = np.sqrt(np.exp(layer.bias_log_var.detach().numpy()))
    rng = np.random.default_rng(11)
    w_mean, b_mean = layer.weight.detach().numpy(), layer.bias.detach().numpy()

    def sampled_layer(t):
        # A fresh weight draw for every sample of x (the draws are stacked on axis 0 of t).
        rows = t.numpy().reshape(-1, x.shape[0], 5)
        w = w_mean + w_sd * rng.standard_normal((rows.shape[0], 3, 5))
        b = b_mean + b_sd * rng.standard_normal((rows.shape[0], 1, 3))
        return pb.tensor(np.einsum("sbi,soi->sbo", rows, w) + b).reshape(-1, 3)

    assert_within_sampling_error(layer(x), monte_carlo(sampled_layer, x))


# Approximations: the slack is the largest relative error measured here against Monte Carlo
# (mean against |mean| + sd, variance against the variance), rounded up; docs/pramana.md lists
# the measured values (benchmarks/pramana_layers.py, docs/pramana/layers.csv). Inputs: means
# N(0, 1), variances U(0.1, 1).
APPROXIMATE = {
    ("tanh", "quadrature"): 0.03, ("sigmoid", "quadrature"): 0.02,
    ("gelu", "quadrature"): 0.03, ("silu", "quadrature"): 0.03,
    ("softplus", "quadrature"): 0.02,
    ("tanh", "delta"): 1.6, ("sigmoid", "delta"): 0.45, ("gelu", "delta"): 0.7,
    ("silu", "delta"): 0.65, ("softplus", "delta"): 0.35,
}
LAYERS = {"tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "gelu": nn.GELU, "silu": nn.SiLU,
          "softplus": nn.Softplus}


@pytest.mark.parametrize("name, method", sorted(APPROXIMATE), ids="-".join)
def test_smooth_activations_are_within_their_measured_error(name, method):
    layer = LAYERS[name]()
    x = _input((4, 6), var_range=(0.1, 1.0))
    got = pr.propagate(layer, x, smooth=method)
    assert_within_sampling_error(got, monte_carlo(layer, x), slack=APPROXIMATE[name, method])


def test_second_order_terms_beat_first_order_on_the_mean():
    layer = nn.Tanh()
    x = _input((4, 6), var_range=(0.05, 0.2))
    ref = monte_carlo(layer, x)
    first = relative_discrepancy(pr.functional.smooth("tanh", x, "delta", second_order=False), ref)
    second = relative_discrepancy(pr.functional.smooth("tanh", x, "delta"), ref)
    assert second[0] < first[0] / 3


def test_clark_max_pool_is_exact_for_two_entries_and_close_for_four():
    pair = nn.MaxPool2d((1, 2))
    x = _input((2, 1, 3, 4))
    assert_within_sampling_error(pr.propagate(pair, x), monte_carlo(pair, x))
    window = nn.MaxPool2d(2)
    assert_within_sampling_error(pr.propagate(window, x), monte_carlo(window, x), slack=0.06)


def test_sum_product_and_matmul_of_independent_variables_match_monte_carlo():
    x, y = _input((3, 4), seed=1), _input((3, 4), seed=2)
    w = pb.tensor(np.random.default_rng(3).normal(size=(4, 2)))
    rng = np.random.default_rng(9)
    # x and y stacked on the last axis so that one Monte Carlo run draws both, independently.
    both = pr.DistributionalTensor(pb.stack([x.mean, y.mean], -1), pb.stack([x.var, y.var], -1))
    for got, fn in [(x + y, lambda t: t[..., 0] + t[..., 1]),
                    (x - y, lambda t: t[..., 0] - t[..., 1]),
                    (x * y, lambda t: t[..., 0] * t[..., 1]),
                    (2.5 * x - 1.0, lambda t: 2.5 * t[..., 0] - 1.0),
                    (x @ w, lambda t: t[..., 0] @ w)]:
        assert_within_sampling_error(got, monte_carlo(fn, both, seed=int(rng.integers(1000))))


def test_mean_field_softmax_is_closer_to_monte_carlo_than_ignoring_the_variance():
    x = _input((6, 5), var_range=(0.5, 3.0))
    ref = monte_carlo(lambda t: F.softmax(t, dim=1), x)
    approx = pr.functional.softmax_mean(x, dim=1).numpy()
    plain = F.softmax(x.mean, dim=1).numpy()
    err_approx, err_plain = np.abs(approx - ref.mean).max(), np.abs(plain - ref.mean).max()
    # Measured: 0.044 against 0.068 for these logits (docs/pramana.md): better, not exact.
    assert err_approx < 0.05 and err_approx < 0.8 * err_plain
    np.testing.assert_allclose(approx.sum(1), 1.0, rtol=1e-12)
