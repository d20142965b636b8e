"""Every layer takes PyTorch's constructor arguments, in PyTorch's order, with PyTorch's
defaults (so that ``nn.X(...)`` calls port unchanged), and the random layers (dropout variants,
RReLU in training) behave as PyTorch's do, checked statistically and by their structure."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.nn import modules

torch = pytest.importorskip("torch", reason="PyTorch is the reference of these tests")

# Layers whose constructor still differs from PyTorch's, each with the work that owns it; the
# test fails once one matches, so that the entry is removed.
NOT_YET: dict[str, str] = {}


def _default(value):
    # A function default (Transformer's activation=F.relu) is each framework's own function:
    # compare by name.
    return ("function", value.__name__) if inspect.isfunction(value) else value


def _parameters(cls):
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [(p.name, _default(p.default), p.kind == p.KEYWORD_ONLY) for p in params
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


PAIRED = sorted(n for n in modules.__all__ if hasattr(torch.nn, n))


@pytest.mark.parametrize("name", PAIRED)
def test_constructor_matches_torch(name):
    ours, theirs = _parameters(getattr(nn, name)), _parameters(getattr(torch.nn, name))
    if name in NOT_YET:
        assert ours != theirs, f"{name} now matches PyTorch: remove it from NOT_YET"
        return
    assert ours == theirs


def _train(layer, x):
    layer.train()
    return layer(x)


@pytest.mark.parametrize("cls, shape, channel_axes", [
    (nn.Dropout1d, (8, 50, 6), 2), (nn.Dropout1d, (50, 6), 1), (nn.Dropout2d, (8, 50, 3, 4), 2),
    (nn.Dropout2d, (8, 50, 5), 2), (nn.Dropout3d, (4, 50, 2, 3, 2), 2),
    (nn.Dropout3d, (50, 2, 3, 2), 1)])
def test_channel_dropout_drops_whole_channels(cls, shape, channel_axes):
    pullback.manual_seed(0)
    p = 0.3
    x = pullback.tensor(np.random.default_rng(0).uniform(1, 2, shape), requires_grad=True)
    out = _train(cls(p), x)
    ratio = np.asarray(out.detach()) / np.asarray(x.detach())
    per_channel = ratio.reshape(ratio.shape[:channel_axes] + (-1,))
    assert np.allclose(per_channel, per_channel[..., :1]), "a channel was partly dropped"
    kept = per_channel[..., 0]
    assert set(np.unique(np.round(kept, 12))) <= {0.0, round(1 / (1 - p), 12)}
    assert abs((kept == 0).mean() - p) < 0.1
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), ratio)
    assert cls(p).eval()(x) is x
    assert np.all(np.asarray(_train(cls(1.0), x).detach()) == 0)


def test_channel_dropout_is_seeded():
    x = pullback.ones(4, 6, 5)
    pullback.manual_seed(3)
    first = np.asarray(_train(nn.Dropout1d(0.5), x))
    pullback.manual_seed(3)
    np.testing.assert_array_equal(first, np.asarray(_train(nn.Dropout1d(0.5), x)))


@pytest.mark.parametrize("cls, shape", [(nn.AlphaDropout, (200, 500)),
                                        (nn.FeatureAlphaDropout, (400, 250, 1))])
def test_alpha_dropout_keeps_a_standard_normals_mean_and_variance(cls, shape):
    pullback.manual_seed(0)
    x = pullback.tensor(np.random.default_rng(1).standard_normal(shape))
    out = np.asarray(_train(cls(0.2), x))
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02
    # dropped units all take one value: SELU's saturation mapped by the same affine map
    alpha = 1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    a = 1 / math.sqrt((alpha ** 2 * 0.2 + 1) * 0.8)
    dropped = np.isclose(out, -alpha * a + alpha * a * 0.2)
    assert abs(dropped.mean() - 0.2) < 0.02
    assert cls(0.2).eval()(x) is x


def test_rrelu_in_training_draws_slopes_between_its_bounds():
    pullback.manual_seed(0)
    x = pullback.tensor(np.random.default_rng(2).standard_normal(20000), requires_grad=True)
    out = _train(nn.RReLU(0.1, 0.4), x)
    xs, ys = np.asarray(x.detach()), np.asarray(out.detach())
    slopes = ys[xs < 0] / xs[xs < 0]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.4
    assert abs(slopes.mean() - 0.25) < 0.01 and abs(slopes.std() - 0.3 / math.sqrt(12)) < 0.01
    np.testing.assert_array_equal(ys[xs > 0], xs[xs > 0])
    out.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.where(xs > 0, 1.0, ys / xs))


def test_one_hot_matches_torch():
    idx = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(np.asarray(nn.functional.one_hot(pullback.tensor(idx))),
                                  torch.nn.functional.one_hot(torch.tensor(idx)).numpy())
    np.testing.assert_array_equal(
        np.asarray(nn.functional.one_hot(pullback.tensor(idx), num_classes=6)),
        torch.nn.functional.one_hot(torch.tensor(idx), num_classes=6).numpy())


def test_gumbel_softmax_samples_the_categorical_distribution():
    pullback.manual_seed(0)
    logits = pullback.tensor(np.log([[0.1, 0.2, 0.7]] * 20000), requires_grad=True)
    hard = nn.functional.gumbel_softmax(logits, tau=0.5, hard=True)
    counts = np.asarray(hard.detach()).mean(axis=0)
    np.testing.assert_allclose(counts, [0.1, 0.2, 0.7], atol=0.015)
    assert set(np.unique(np.asarray(hard.detach()))) == {0.0, 1.0}
    hard[:, 2].sum().backward()  # straight-through: the soft sample's gradient
    assert np.isfinite(np.asarray(logits.grad)).all() and np.abs(np.asarray(logits.grad)).sum() > 0


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scales_gradients_by_the_true_frequency(mode):
    """Each row's gradient divided by its index's count in the batch, as nn.Embedding (and
    PyTorch's CUDA kernel) do; torch 2.13's CPU EmbeddingBag divides some rows by another
    index's count (pytorch/pytorch#190063), so the oracle is its unscaled gradient over the
    counts."""
    idx = np.array([0, 1, 1, 2, 1, 3, 3])
    offsets = np.array([0, 3, 5])
    weight = np.random.default_rng(0).standard_normal((5, 3))
    ours = nn.EmbeddingBag(5, 3, mode=mode, scale_grad_by_freq=True, padding_idx=0,
                           _weight=pullback.tensor(weight))
    ours(pullback.tensor(idx), pullback.tensor(offsets)).sum().backward()
    theirs = torch.nn.EmbeddingBag(5, 3, mode=mode, padding_idx=0,
                                   _weight=torch.tensor(weight))
    theirs(torch.tensor(idx), torch.tensor(offsets)).sum().backward()
    counts = np.maximum(np.bincount(idx, minlength=5), 1)[:, None]
    np.testing.assert_allclose(np.asarray(ours.weight.grad), theirs.weight.grad.numpy() / counts,
                               rtol=1e-12)


def test_embedding_max_norm_renormalizes_the_weight_in_place_like_torch():
    weight = np.random.default_rng(1).standard_normal((6, 4)) * 2
    ours = nn.Embedding.from_pretrained(pullback.tensor(weight), max_norm=1.0)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(weight), max_norm=1.0)
    idx = np.array([[0, 2], [2, 5]])
    ours(pullback.tensor(idx))
    theirs(torch.tensor(idx))
    np.testing.assert_allclose(np.asarray(ours.weight.detach()), theirs.weight.detach().numpy(),
                               rtol=1e-12)
    assert not ours.weight.requires_grad  # from_pretrained freezes by default


@pytest.mark.parametrize("name,shape,args", [
    ("max_pool1d_with_indices", (2, 3, 7), (3, 2)), ("max_pool2d_with_indices", (1, 2, 5, 6), (2,)),
    ("max_pool3d_with_indices", (1, 1, 4, 4, 3), (2, 1, 1)),
    ("adaptive_max_pool1d_with_indices", (2, 3, 7), (3,)),
    ("adaptive_max_pool2d_with_indices", (1, 2, 5, 6), ((2, 4),)),
    ("adaptive_max_pool3d_with_indices", (1, 1, 4, 4, 3), (2,))])
def test_with_indices_functions_match_torch(name, shape, args):
    x = np.random.default_rng(0).standard_normal(shape)
    values, indices = getattr(nn.functional, name)(pullback.tensor(x), *args)
    t_values, t_indices = getattr(torch.nn.functional, name)(torch.tensor(x), *args)
    np.testing.assert_allclose(np.asarray(values), t_values.numpy(), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(indices), t_indices.numpy())
