"""Parity cases of the activation, normalization, distance and dropout layers (run by
test_parity_layers.py through :func:`nn_parity.check_layer`)."""

from __future__ import annotations


import numpy as np

from nn_parity import Case, normal, ints


def kinks(*points, shape=(4, 6)):
    """Normal inputs with some entries exactly at the activation's kinks (where PyTorch's
    backward picks a side)."""
    def make(rng):
        x = rng.standard_normal(shape) * 3
        flat = x.reshape(-1)
        for i, p in enumerate(points):
            flat[i] = p
        return [x]
    return make


def two(*shape, scale=1.0):
    return lambda rng: [rng.standard_normal(shape) * scale, rng.standard_normal(shape) * scale]


CASES = [
    Case("ReLU", lambda m: m.ReLU(), kinks(0.0)),
    Case("ReLU6", lambda m: m.ReLU6(), kinks(0.0, 6.0, -1.0, 7.0)),
    Case("Hardtanh-bounds", lambda m: m.Hardtanh(-2.0, 1.5), kinks(-2.0, 1.5)),
    Case("Hardsigmoid", lambda m: m.Hardsigmoid(), kinks(-3.0, 3.0, 0.0)),
    Case("Hardswish", lambda m: m.Hardswish(), kinks(-3.0, 3.0, 0.0)),
    Case("CELU", lambda m: m.CELU(), kinks(0.0)),
    Case("CELU-alpha", lambda m: m.CELU(alpha=0.5), normal(4, 6, scale=3)),
    Case("SELU", lambda m: m.SELU(), kinks(0.0)),
    Case("Mish", lambda m: m.Mish(), normal(4, 6, scale=4)),
    Case("LogSigmoid", lambda m: m.LogSigmoid(), normal(4, 6, scale=10)),
    Case("Softsign", lambda m: m.Softsign(), normal(4, 6, scale=3)),
    Case("Softmin", lambda m: m.Softmin(dim=1), normal(3, 4, 5)),
    Case("Softmax2d", lambda m: m.Softmax2d(), normal(2, 3, 4, 5)),
    Case("Softmax2d-unbatched", lambda m: m.Softmax2d(), normal(3, 4, 5)),
    Case("Tanhshrink", lambda m: m.Tanhshrink(), normal(4, 6)),
    Case("Softshrink", lambda m: m.Softshrink(), kinks(0.5, -0.5, 0.0)),
    Case("Softshrink-lambd", lambda m: m.Softshrink(1.2), normal(4, 6, scale=2)),
    Case("Hardshrink", lambda m: m.Hardshrink(), kinks(0.5, -0.5, 0.0)),
    Case("GLU", lambda m: m.GLU(), normal(3, 8)),
    Case("GLU-dim1", lambda m: m.GLU(dim=1), normal(3, 4, 5)),
    Case("PReLU", lambda m: m.PReLU(), kinks(0.0)),
    Case("PReLU-per-channel", lambda m: m.PReLU(3, init=0.1), normal(2, 3, 4, 5)),
    Case("PReLU-1d-input", lambda m: m.PReLU(), normal(7)),
    Case("RReLU-eval", lambda m: m.RReLU(0.1, 0.3), normal(4, 6), ("eval",)),
    Case("Threshold", lambda m: m.Threshold(0.1, 20.0), kinks(0.1, 0.0)),
    Case("LeakyReLU-kink", lambda m: m.LeakyReLU(0.2), kinks(0.0)),
    Case("ELU-kink", lambda m: m.ELU(), kinks(0.0)),
    Case("LogSoftmax-dim1", lambda m: m.LogSoftmax(1), normal(3, 4, 5)),
    # normalization
    Case("BatchNorm3d", lambda m: m.BatchNorm3d(3), normal(2, 3, 2, 3, 4), ("train", "eval")),
    Case("InstanceNorm1d", lambda m: m.InstanceNorm1d(3), normal(2, 3, 6)),
    Case("InstanceNorm1d-unbatched-affine", lambda m: m.InstanceNorm1d(3, affine=True),
         normal(3, 6)),
    Case("InstanceNorm2d-affine-running", lambda m: m.InstanceNorm2d(
        3, affine=True, track_running_stats=True), normal(2, 3, 4, 5), ("train", "eval")),
    Case("InstanceNorm2d-running-momentum-none", lambda m: m.InstanceNorm2d(
        2, momentum=None, track_running_stats=True), normal(3, 2, 3, 3), ("train", "eval")),
    Case("InstanceNorm3d", lambda m: m.InstanceNorm3d(2, eps=1e-3, affine=True),
         normal(2, 2, 3, 2, 4)),
    Case("LocalResponseNorm-3d", lambda m: m.LocalResponseNorm(3), normal(2, 5, 7, scale=5)),
    Case("LocalResponseNorm-4d", lambda m: m.LocalResponseNorm(4, alpha=0.1, beta=0.5, k=2.0),
         normal(2, 6, 3, 4, scale=3)),
    Case("LocalResponseNorm-5d", lambda m: m.LocalResponseNorm(2), normal(1, 4, 2, 3, 2)),
    # distances
    Case("CosineSimilarity", lambda m: m.CosineSimilarity(), two(4, 5)),
    Case("CosineSimilarity-dim-eps-broadcast", lambda m: m.CosineSimilarity(dim=-1, eps=0.5),
         lambda r: [r.standard_normal((3, 1, 4)) * 0.1, r.standard_normal((2, 4))]),
    Case("PairwiseDistance", lambda m: m.PairwiseDistance(), two(4, 5)),
    Case("PairwiseDistance-p1-keepdim", lambda m: m.PairwiseDistance(p=1, keepdim=True),
         two(3, 4, 5)),
    Case("PairwiseDistance-p3", lambda m: m.PairwiseDistance(p=3.0, eps=1e-3), two(4, 5)),
    # dropout in evaluation (training is random: test_dropout.py checks it statistically)
    Case("Dropout1d-eval", lambda m: m.Dropout1d(0.4), normal(2, 3, 5), ("eval",)),
    Case("Dropout2d-eval", lambda m: m.Dropout2d(0.4), normal(2, 3, 4, 5), ("eval",)),
    Case("Dropout3d-eval", lambda m: m.Dropout3d(0.4), normal(2, 3, 2, 4, 5), ("eval",)),
    Case("AlphaDropout-eval", lambda m: m.AlphaDropout(0.3), normal(4, 5), ("eval",)),
    Case("FeatureAlphaDropout-eval", lambda m: m.FeatureAlphaDropout(0.3), normal(2, 3, 4),
         ("eval",)),
]


def functional(name, **kwargs):
    return lambda m: (lambda *args: getattr(m.functional, name)(*args, **kwargs))


CASES += [
    Case("F.normalize", functional("normalize"), normal(3, 4, 5)),
    Case("F.normalize-p1-dim-eps", functional("normalize", p=1.0, dim=-1, eps=0.5),
         normal(3, 4, scale=0.1)),
    Case("F.pdist", functional("pdist"), normal(5, 3)),
    Case("F.pdist-p1", functional("pdist", p=1.0), normal(4, 3)),
]


def bags(high, sizes, weights=False, last=False):
    """A 1-d input of bags of ``sizes`` (empty ones too), its offsets (with the end appended
    for ``include_last_offset``) and optionally per-sample weights."""
    def make(rng):
        total = int(sum(sizes))
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        if last:
            offsets = np.append(offsets, total)
        out = [rng.integers(0, high, total), offsets.astype(np.int64)]
        return out + [rng.standard_normal(total)] if weights else out
    return make


def repeated(high, *shape):
    """Indices with repeats (for scale_grad_by_freq) and the padding index 0 among them."""
    def make(rng):
        x = rng.integers(0, high, shape)
        x.reshape(-1)[:3] = [0, 1, 1]
        return [x]
    return make


CASES += [
    Case("Embedding-max_norm", lambda m: m.Embedding(7, 4, max_norm=1.5), ints(7, 3, 5)),
    Case("Embedding-max_norm-p1", lambda m: m.Embedding(7, 4, max_norm=2.0, norm_type=1.0),
         ints(7, 6)),
    Case("Embedding-scale_grad_by_freq-padding", lambda m: m.Embedding(
        5, 3, padding_idx=0, scale_grad_by_freq=True), repeated(5, 4, 6)),
    Case("Embedding-from_pretrained", lambda m: m.Embedding.from_pretrained(
        m.Embedding(6, 3).weight.detach() * 0 + 1, freeze=False), ints(6, 4)),
    Case("EmbeddingBag-mean-2d", lambda m: m.EmbeddingBag(8, 3), ints(8, 4, 5)),
    Case("EmbeddingBag-sum-offsets-empty-bag", lambda m: m.EmbeddingBag(8, 3, mode="sum"),
         bags(8, [3, 0, 4, 1])),
    Case("EmbeddingBag-max-offsets", lambda m: m.EmbeddingBag(8, 3, mode="max"),
         bags(8, [2, 4, 0, 3])),
    Case("EmbeddingBag-sum-per_sample_weights-last-offset", lambda m: m.EmbeddingBag(
        9, 2, mode="sum", include_last_offset=True), bags(9, [3, 2, 4], weights=True, last=True)),
    # scale_grad_by_freq is in test_layer_api.py: torch 2.13's CPU EmbeddingBag divides by the
    # wrong counts (pytorch/pytorch#190063)
    Case("EmbeddingBag-mean-padding-max_norm", lambda m: m.EmbeddingBag(
        5, 4, padding_idx=0, max_norm=1.0), repeated(5, 3, 6)),
    Case("EmbeddingBag-max-padding", lambda m: m.EmbeddingBag(5, 4, mode="max", padding_idx=1),
         repeated(5, 3, 4)),
]


def symmetric(m):
    """A parametrization written against either framework's API: the symmetric matrix of the
    upper triangle (PyTorch's tutorial example)."""
    class Symmetric(m.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).mT
    return Symmetric()


def parametrized(make_layer, name, parametrization):
    return lambda m: m.utils.parametrize.register_parametrization(
        make_layer(m), name, parametrization(m))


CASES += [
    # parametrizations (state_dict keys, gradients of the originals, the power iteration's
    # buffers u and v in training and evaluation)
    Case("weight_norm-Linear", lambda m: m.utils.parametrizations.weight_norm(m.Linear(5, 3)),
         normal(4, 5)),
    Case("weight_norm-Conv2d-dim1", lambda m: m.utils.parametrizations.weight_norm(
        m.Conv2d(2, 3, 3), dim=1), normal(1, 2, 5, 5)),
    Case("weight_norm-Linear-dim-None", lambda m: m.utils.parametrizations.weight_norm(
        m.Linear(3, 2), dim=None), normal(4, 3)),
    Case("spectral_norm-Linear", lambda m: m.utils.parametrizations.spectral_norm(
        m.Linear(5, 4)), normal(3, 5), ("train", "eval")),
    Case("spectral_norm-ConvTranspose2d-3-iterations", lambda m: (
        m.utils.parametrizations.spectral_norm(m.ConvTranspose2d(2, 3, 2),
                                               n_power_iterations=3)),
         normal(1, 2, 3, 3), ("train", "eval")),
    Case("register_parametrization-symmetric", parametrized(
        lambda m: m.Linear(4, 4), "weight", symmetric), normal(3, 4)),
]


def quiet(make):
    """``make`` with the deprecation warning of the old weight_norm silenced (both sides)."""
    def build(m):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return make(m)
    return build


CASES += [
    # PyTorch's older, hook-based forms (weight_g/weight_v, weight_orig/weight_u/weight_v)
    Case("utils.weight_norm-Linear", quiet(lambda m: m.utils.weight_norm(m.Linear(5, 3))),
         normal(4, 5)),
    Case("utils.weight_norm-Conv1d-dim-None", quiet(lambda m: m.utils.weight_norm(
        m.Conv1d(2, 3, 3), dim=None)), normal(2, 2, 6)),
    Case("utils.spectral_norm-Linear", lambda m: m.utils.spectral_norm(m.Linear(5, 4)),
         normal(3, 5), ("train", "eval")),
    Case("utils.spectral_norm-ConvTranspose1d-2-iterations", lambda m: m.utils.spectral_norm(
        m.ConvTranspose1d(3, 2, 3), n_power_iterations=2), normal(2, 3, 5), ("train", "eval")),
]
