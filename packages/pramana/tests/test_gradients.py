"""Gradients of both streams by finite differences (float64 gradcheck), for every moment rule."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import pramana as pr
from pullback.testing import gradcheck

PF = pr.functional


def _leaves(shape, seed=0):
    rng = np.random.default_rng(seed)
    mean = pb.tensor(rng.normal(size=shape), requires_grad=True)
    var = pb.tensor(rng.uniform(0.2, 1.0, shape), requires_grad=True)
    return mean, var


def _check(fn, shape, *extra):
    mean, var = _leaves(shape)

    def both(m, v, *rest):
        y = fn(pr.DistributionalTensor._new(m, v), *rest)
        return y.mean, y.var

    assert gradcheck(both, (mean, var, *extra), eps=1e-6, atol=1e-6, rtol=1e-5)


RULES = {
    "relu": (PF.relu, (2, 3)),
    "leaky_relu": (lambda x: PF.leaky_relu(x, 0.2), (2, 3)),
    "dropout": (lambda x: PF.dropout(x, 0.3), (2, 3)),
    "max_pool2d": (lambda x: PF.max_pool2d(x, 2), (1, 1, 2, 4)),
    "avg_pool2d": (lambda x: PF.avg_pool2d(x, 2, padding=1, count_include_pad=False), (1, 1, 3, 3)),
    "variance_floor": (lambda x: PF.variance_floor(x, 0.5), (2, 3)),
    **{f"{name}-{method}": ((lambda x, n=name, m=method: PF.smooth(n, x, m)), (2, 3))
       for name in ("tanh", "sigmoid", "gelu", "silu", "softplus")
       for method in ("delta", "quadrature")},
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_gradcheck_of_both_streams(rule):
    fn, shape = RULES[rule]
    _check(fn, shape)


def test_gradcheck_of_linear_and_conv_with_respect_to_weights():
    rng = np.random.default_rng(1)
    w = pb.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    b = pb.tensor(rng.normal(size=2), requires_grad=True)
    _check(lambda x, w_, b_: PF.linear(x, w_, b_), (4, 3), w, b)
    k = pb.tensor(rng.normal(size=(2, 1, 2, 2)), requires_grad=True)
    _check(lambda x, k_: PF.conv2d(x, k_, None, 1, 1), (1, 1, 3, 3), k)


def test_gradcheck_of_the_bayesian_rules_with_respect_to_their_parameters():
    rng = np.random.default_rng(2)
    w = pb.tensor(rng.normal(size=(2, 3)), requires_grad=True)
    lw = pb.tensor(rng.normal(-1.0, 0.3, (2, 3)), requires_grad=True)
    b = pb.tensor(rng.normal(size=2), requires_grad=True)
    lb = pb.tensor(rng.normal(-1.0, 0.3, 2), requires_grad=True)
    _check(lambda x, *p: PF.bayesian_linear(x, *p), (2, 3), w, lw, b, lb)
    k = pb.tensor(rng.normal(size=(1, 1, 2, 2)), requires_grad=True)
    lk = pb.tensor(rng.normal(-1.0, 0.3, (1, 1, 2, 2)), requires_grad=True)
    _check(lambda x, k_, lk_: PF.bayesian_conv2d(x, k_, lk_, padding=1), (1, 1, 2, 2), k, lk)
    assert gradcheck(lambda m, lv: PF.gaussian_kl(m, lv, 0.7), (w, lw))


def test_products_of_distributions_gradcheck():
    m1, v1 = _leaves((2, 2), seed=3)
    m2, v2 = _leaves((2, 2), seed=4)

    def fn(a, b, c, d):
        y = pr.DistributionalTensor._new(a, b) * pr.DistributionalTensor._new(c, d)
        return y.mean, y.var

    assert gradcheck(fn, (m1, v1, m2, v2))
