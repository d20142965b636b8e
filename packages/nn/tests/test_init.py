"""pullback.nn.init and the layers' default initialization, tested statistically against the
analytic distributions PyTorch uses (bounds and standard deviations)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.nn import init


def _values(t):
    return np.asarray(t.detach(), dtype=np.float64).ravel()


def _assert_uniform(values, bound):
    """Samples of U(-bound, bound): inside the bounds, near them, std bound/sqrt(3)."""
    assert values.min() >= -bound and values.max() <= bound
    assert values.min() < -0.95 * bound and values.max() > 0.95 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.05 * bound / math.sqrt(3)
    assert abs(values.mean()) < 0.05 * bound


def _assert_normal(values, std, mean=0.0):
    assert abs(values.std() - std) < 0.05 * std
    assert abs(values.mean() - mean) < 0.05 * std + 1e-12


def test_calculate_gain_table():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == pytest.approx(0.75)
    with pytest.raises(ValueError, match="unsupported"):
        init.calculate_gain("swish")


def test_gains_agree_with_torch():
    torch = pytest.importorskip("torch")
    for name, param in [("tanh", None), ("relu", None), ("leaky_relu", None),
                        ("leaky_relu", 0.3), ("selu", None), ("linear", None)]:
        assert init.calculate_gain(name, param) == pytest.approx(
            torch.nn.init.calculate_gain(name, param))


def test_uniform_normal_constant():
    t = pullback.empty(200, 100)
    _assert_uniform(_values(init.uniform_(t, -2.0, 2.0)), 2.0)
    _assert_normal(_values(init.normal_(t, 1.5, 0.5)), 0.5, 1.5)
    assert set(_values(init.constant_(t, 0.25))) == {0.25}
    assert set(_values(init.zeros_(t))) == {0.0} and set(_values(init.ones_(t))) == {1.0}
    tn = _values(init.trunc_normal_(pullback.empty(20000), std=1.0, a=-1.0, b=1.5))
    assert tn.min() >= -1.0 and tn.max() <= 1.5


@pytest.mark.parametrize("shape", [(300, 200), (64, 32, 3, 3)])
def test_xavier(shape):
    t = pullback.empty(*shape)
    receptive = int(np.prod(shape[2:]))
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    _assert_uniform(_values(init.xavier_uniform_(t, gain=2.0)),
                    2.0 * math.sqrt(6 / (fan_in + fan_out)))
    _assert_normal(_values(init.xavier_normal_(t)), math.sqrt(2 / (fan_in + fan_out)))


@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity,a", [("relu", 0), ("leaky_relu", 0.1), ("tanh", 0)])
def test_kaiming(mode, nonlinearity, a):
    t = pullback.empty(128, 64, 3, 3)
    fan = (64 if mode == "fan_in" else 128) * 9
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    _assert_uniform(_values(init.kaiming_uniform_(t, a=a, mode=mode, nonlinearity=nonlinearity)),
                    math.sqrt(3) * std)
    _assert_normal(_values(init.kaiming_normal_(t, a=a, mode=mode, nonlinearity=nonlinearity)), std)


@pytest.mark.parametrize("shape", [(6, 10), (10, 6), (4, 3, 2)])
def test_orthogonal(shape):
    t = init.orthogonal_(pullback.empty(*shape, dtype="float64"), gain=1.5)
    m = _values(t).reshape(shape[0], -1) / 1.5
    small = min(m.shape)
    gram = m @ m.T if m.shape[0] == small else m.T @ m
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)


def test_fan_needs_two_dims():
    with pytest.raises(pullback.ShapeError, match="at least 2 dims"):
        init.xavier_uniform_(pullback.empty(5))


def test_init_is_seeded_by_manual_seed():
    pullback.manual_seed(123)
    a = _values(nn.Linear(8, 4).weight)
    pullback.manual_seed(123)
    b = _values(nn.Linear(8, 4).weight)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make,fan_in", [
    (lambda: nn.Linear(400, 300), 400),
    (lambda: nn.Conv2d(16, 32, 5), 16 * 25),
    (lambda: nn.Conv2d(16, 32, 3, groups=4), 4 * 9),
    (lambda: nn.Conv1d(8, 40, 7), 8 * 7),
    (lambda: nn.ConvTranspose2d(16, 24, 3), 24 * 9),  # weight (in, out, k, k): fan_in is dim 1
])
def test_layer_defaults_are_pytorchs(make, fan_in):
    """kaiming_uniform(a=sqrt(5)) gives U(+-1/sqrt(fan_in)) for weights and biases alike."""
    layer = make()
    bound = 1 / math.sqrt(fan_in)
    _assert_uniform(_values(layer.weight), bound)
    b = _values(layer.bias)
    assert b.min() >= -bound and b.max() <= bound


def test_other_layer_defaults():
    _assert_normal(_values(nn.Embedding(500, 64).weight), 1.0)
    emb = nn.Embedding(10, 4, padding_idx=3)
    assert not _values(emb.weight).reshape(10, 4)[3].any()
    bil = nn.Bilinear(50, 20, 40)
    _assert_uniform(_values(bil.weight), 1 / math.sqrt(50))
    mha = nn.MultiheadAttention(64, 4)
    _assert_uniform(_values(mha.in_proj_weight), math.sqrt(6 / (64 + 192)))
    assert not _values(mha.in_proj_bias).any() and not _values(mha.out_proj.bias).any()
    for layer in (nn.LayerNorm(5), nn.GroupNorm(1, 5), nn.BatchNorm1d(5)):
        assert set(_values(layer.weight)) == {1.0} and set(_values(layer.bias)) == {0.0}
    bn = nn.BatchNorm2d(3)
    assert set(_values(bn.running_mean)) == {0.0} and set(_values(bn.running_var)) == {1.0}


def test_every_torch_initializer_exists_with_its_signature():
    torch = pytest.importorskip("torch")
    import inspect

    names = [n for n, v in vars(torch.nn.init).items() if inspect.isfunction(v)
             and v.__module__ == "torch.nn.init" and not n.startswith("_")]
    assert len(names) > 20
    for name in names:
        if name.endswith("_") or name == "calculate_gain":
            theirs = list(inspect.signature(getattr(torch.nn.init, name)).parameters)
        else:  # a deprecated alias (torch's takes *args, **kwargs): the function it stands for
            theirs = list(inspect.signature(getattr(torch.nn.init, name + "_")).parameters)
        assert list(inspect.signature(getattr(init, name)).parameters) == theirs, name


@pytest.mark.parametrize("shape,groups", [((4, 4, 3), 1), ((6, 2, 3, 2), 2), ((2, 5, 3, 3, 3), 1),
                                          ((6, 3, 1, 4), 3)])
def test_dirac_matches_torch(shape, groups):
    torch = pytest.importorskip("torch")
    ours = init.dirac_(pullback.empty(*shape), groups)
    theirs = torch.nn.init.dirac_(torch.empty(*shape), groups)
    np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(pullback.empty(5, 2, 3), 2)


def test_sparse_zeroes_the_same_count_in_every_column():
    pullback.manual_seed(0)
    t = init.sparse_(pullback.empty(400, 300), sparsity=0.3, std=0.05)
    values = np.asarray(t)
    assert ((values == 0).sum(axis=0) == 120).all()  # ceil(0.3 * 400) per column
    kept = values[values != 0]
    assert abs(kept.std() - 0.05) < 0.002 and abs(kept.mean()) < 0.002
    # which rows are zeroed differs between columns (a permutation per column)
    assert len({tuple(np.flatnonzero(values[:, j] == 0)) for j in range(10)}) == 10


def test_deprecated_names_warn_and_fill():
    t = pullback.empty(3, 3)
    with pytest.warns(FutureWarning, match="nn.init.eye_"):
        assert init.eye(t) is t
    np.testing.assert_array_equal(np.asarray(t), np.eye(3))
