"""Parity cases of the activation, normalization, distance and dropout layers (run by
test_parity_layers.py through :func:`nn_parity.check_layer`)."""

from __future__ import annotations


from nn_parity import Case, normal


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
