"""One small instance and float64 inputs for every layer class of pullback.nn
(``pullback.nn.modules.__all__``), for the fx tests that trace each one.

``CASES`` maps a class name to ``(make, inputs)``: ``make()`` builds the layer, ``inputs(rng)``
its positional inputs (NumPy arrays become float64 tensors; integer arrays stay integers).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pullback import nn


def normal(*shape: int, scale: float = 1.0) -> Callable[[np.random.Generator], list[Any]]:
    return lambda rng: [rng.standard_normal(shape) * scale]


def normals(*shapes: tuple[int, ...]) -> Callable[[np.random.Generator], list[Any]]:
    return lambda rng: [rng.standard_normal(s) for s in shapes]


def with_target(shape: tuple[int, ...], target: Callable[[np.random.Generator], Any]
                ) -> Callable[[np.random.Generator], list[Any]]:
    return lambda rng: [rng.standard_normal(shape), target(rng)]


def probabilities(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return 1 / (1 + np.exp(-rng.standard_normal(shape)))


def signs(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: np.where(rng.standard_normal(shape) > 0, 1.0, -1.0)


def classes(n: int, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.integers(0, n, shape)


def unpool_inputs(dims: int) -> Callable[[np.random.Generator], list[Any]]:
    """A max pool's output and indices, as MaxUnpool takes them."""
    def make(rng: np.random.Generator) -> list[Any]:
        import pullback

        pool = getattr(nn, f"MaxPool{dims}d")(2, return_indices=True)
        x = pullback.tensor(rng.standard_normal((1, 2) + (4,) * dims))
        out, indices = pool(x)
        return [out, indices]
    return make


def ctc_inputs(rng: np.random.Generator) -> list[Any]:
    import pullback

    logits = pullback.tensor(rng.standard_normal((6, 2, 4)))
    log_probs = pullback.nn.functional.log_softmax(logits, dim=2)
    return [log_probs, rng.integers(1, 4, (2, 3)), np.array([6, 5]), np.array([3, 2])]


def multilabel_margin_target(rng: np.random.Generator) -> np.ndarray:
    target = rng.integers(0, 4, (3, 4))
    target[:, 2:] = -1
    return target


ACTIVATIONS = ["CELU", "ELU", "GELU", "SELU", "Hardshrink", "Hardsigmoid", "Hardswish",
               "Hardtanh", "LeakyReLU", "LogSigmoid", "Mish", "PReLU", "ReLU", "ReLU6",
               "RReLU", "SiLU", "Sigmoid", "Softplus", "Softshrink", "Softsign", "Tanh",
               "Tanhshrink", "Identity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
               "AlphaDropout", "FeatureAlphaDropout", "Flatten", "GLU"]

CASES: dict[str, tuple[Callable[[], nn.Module], Callable[[np.random.Generator], list[Any]]]] = {
    **{name: (getattr(nn, name), normal(2, 4, 3, 2, scale=3.0)) for name in ACTIVATIONS},
    "Dropout1d": (nn.Dropout1d, normal(2, 4, 3)),
    "Threshold": (lambda: nn.Threshold(0.1, 20.0), normal(2, 3, 4)),
    "Softmax": (lambda: nn.Softmax(dim=1), normal(2, 3, 4)),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=1), normal(2, 3, 4)),
    "Softmin": (lambda: nn.Softmin(dim=1), normal(2, 3, 4)),
    "Softmax2d": (nn.Softmax2d, normal(2, 3, 4, 4)),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), normal(4, 6)),
    # convolution
    "Conv1d": (lambda: nn.Conv1d(3, 4, 3, padding=1), normal(2, 3, 8)),
    "Conv2d": (lambda: nn.Conv2d(3, 4, 3, stride=2), normal(2, 3, 7, 7)),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 2), normal(1, 2, 4, 4, 4)),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(3, 2, 3, stride=2), normal(2, 3, 5)),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(3, 2, 3, stride=2), normal(2, 3, 4, 4)),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(2, 2, 2), normal(1, 2, 3, 3, 3)),
    # normalization
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3), normal(4, 3, 5)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3), normal(4, 3, 5, 5)),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(2), normal(2, 2, 3, 3, 3)),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3, affine=True), normal(2, 3, 6)),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3), normal(2, 3, 4, 4)),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(2), normal(2, 2, 3, 3, 3)),
    "LayerNorm": (lambda: nn.LayerNorm(5), normal(2, 3, 5)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), normal(2, 4, 3)),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(2), normal(2, 5, 4)),
    "RMSNorm": (lambda: nn.RMSNorm(5), normal(2, 3, 5)),
    # pooling
    "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), normal(2, 3, 7)),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d((2, 3)), normal(2, 3, 5, 7)),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d(2), normal(1, 2, 4, 5, 3)),
    "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(3), normal(2, 3, 7)),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d((2, 3)), normal(2, 3, 5, 7)),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), normal(1, 2, 4, 5, 3)),
    "AvgPool1d": (lambda: nn.AvgPool1d(2), normal(2, 3, 8)),
    "AvgPool2d": (lambda: nn.AvgPool2d(2, stride=1), normal(2, 3, 5, 5)),
    "AvgPool3d": (lambda: nn.AvgPool3d(2), normal(1, 2, 4, 4, 4)),
    "MaxPool1d": (lambda: nn.MaxPool1d(2), normal(2, 3, 8)),
    "MaxPool2d": (lambda: nn.MaxPool2d(3, stride=2, padding=1), normal(2, 3, 6, 6)),
    "MaxPool3d": (lambda: nn.MaxPool3d(2), normal(1, 2, 4, 4, 4)),
    "LPPool1d": (lambda: nn.LPPool1d(2, 2), normal(2, 3, 8)),
    "LPPool2d": (lambda: nn.LPPool2d(2, 2), normal(2, 3, 4, 4)),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), normal(1, 2, 4, 4, 4)),
    "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2), unpool_inputs(1)),
    "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2), unpool_inputs(2)),
    "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2), unpool_inputs(3)),
    # padding, resampling
    **{f"{kind}Pad{d}d": ((lambda kind=kind, d=d: getattr(nn, f"{kind}Pad{d}d")(1)),
                          normal(1, 2, *(4,) * d))
       for kind in ("Circular", "Reflection", "Replication", "Zero") for d in (1, 2, 3)},
    **{f"ConstantPad{d}d": ((lambda d=d: getattr(nn, f"ConstantPad{d}d")(1, 2.5)),
                            normal(1, 2, *(3,) * d)) for d in (1, 2, 3)},
    "PixelShuffle": (lambda: nn.PixelShuffle(2), normal(1, 8, 3, 3)),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), normal(1, 2, 4, 4)),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), normal(1, 4, 2, 2)),
    "Fold": (lambda: nn.Fold((4, 4), 2), normal(1, 12, 9)),
    "Unfold": (lambda: nn.Unfold(2), normal(1, 3, 4, 4)),
    "Upsample": (lambda: nn.Upsample(scale_factor=2), normal(1, 2, 3, 3)),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(scale_factor=2), normal(1, 2, 3, 3)),
    "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(scale_factor=2), normal(1, 2, 3, 3)),
    # linear, embeddings, distances
    "Linear": (lambda: nn.Linear(5, 3), normal(2, 4, 5)),
    "Bilinear": (lambda: nn.Bilinear(5, 4, 3), normals((2, 5), (2, 4))),
    "Embedding": (lambda: nn.Embedding(10, 4), lambda rng: [rng.integers(0, 10, (2, 3))]),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(10, 4), lambda rng: [rng.integers(0, 10, (2, 3))]),
    "CosineSimilarity": (nn.CosineSimilarity, normals((3, 5), (3, 5))),
    "PairwiseDistance": (nn.PairwiseDistance, normals((3, 5), (3, 5))),
    # losses
    "BCELoss": (nn.BCELoss, lambda rng: [probabilities(rng, 3, 4), probabilities(rng, 3, 4)]),
    "BCEWithLogitsLoss": (nn.BCEWithLogitsLoss,
                          lambda rng: [rng.standard_normal((3, 4)), probabilities(rng, 3, 4)]),
    "CrossEntropyLoss": (nn.CrossEntropyLoss, with_target((3, 5), classes(5, 3))),
    "NLLLoss": (nn.NLLLoss, with_target((3, 5), classes(5, 3))),
    "CTCLoss": (nn.CTCLoss, ctc_inputs),
    "CosineEmbeddingLoss": (nn.CosineEmbeddingLoss,
                            lambda rng: [rng.standard_normal((3, 4)), rng.standard_normal((3, 4)),
                                         signs(3)(rng)]),
    "GaussianNLLLoss": (nn.GaussianNLLLoss,
                        lambda rng: [rng.standard_normal((3, 2)), rng.standard_normal((3, 2)),
                                     probabilities(rng, 3, 2)]),
    "HingeEmbeddingLoss": (nn.HingeEmbeddingLoss, with_target((3, 4), signs(3, 4))),
    "HuberLoss": (nn.HuberLoss, normals((3, 4), (3, 4))),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"),
                  lambda rng: [np.log(probabilities(rng, 3, 4)), probabilities(rng, 3, 4)]),
    "L1Loss": (nn.L1Loss, normals((3, 4), (3, 4))),
    "MSELoss": (nn.MSELoss, normals((3, 4), (3, 4))),
    "SmoothL1Loss": (nn.SmoothL1Loss, normals((3, 4), (3, 4))),
    "MarginRankingLoss": (nn.MarginRankingLoss,
                          lambda rng: [rng.standard_normal(4), rng.standard_normal(4),
                                       signs(4)(rng)]),
    "MultiLabelMarginLoss": (nn.MultiLabelMarginLoss,
                             with_target((3, 4), multilabel_margin_target)),
    "MultiLabelSoftMarginLoss": (nn.MultiLabelSoftMarginLoss,
                                 with_target((3, 4), lambda rng: rng.integers(0, 2, (3, 4)) * 1.0)),
    "MultiMarginLoss": (nn.MultiMarginLoss, with_target((3, 4), classes(4, 3))),
    "PoissonNLLLoss": (nn.PoissonNLLLoss,
                       lambda rng: [rng.standard_normal((3, 4)), probabilities(rng, 3, 4) * 3]),
    "SoftMarginLoss": (nn.SoftMarginLoss, with_target((3, 4), signs(3, 4))),
    "TripletMarginLoss": (nn.TripletMarginLoss, normals((3, 4), (3, 4), (3, 4))),
    "TripletMarginWithDistanceLoss": (nn.TripletMarginWithDistanceLoss,
                                      normals((3, 4), (3, 4), (3, 4))),
    # recurrent
    "RNN": (lambda: nn.RNN(4, 5), normal(3, 2, 4)),
    "LSTM": (lambda: nn.LSTM(4, 5, num_layers=2), normal(3, 2, 4)),
    "GRU": (lambda: nn.GRU(4, 5, batch_first=True), normal(2, 3, 4)),
    "RNNCell": (lambda: nn.RNNCell(4, 5), normal(2, 4)),
    "LSTMCell": (lambda: nn.LSTMCell(4, 5), normal(2, 4)),
    "GRUCell": (lambda: nn.GRUCell(4, 5), normal(2, 4)),
    # attention, transformers (evaluation mode: dropout off)
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2), normals((3, 2, 8), (4, 2, 8),
                                                                         (4, 2, 8))),
    "MultiHeadAttention": (lambda: nn.MultiHeadAttention(8, 2, batch_first=True),
                           normals((2, 3, 8), (2, 3, 8), (2, 3, 8))),
    "TransformerBlock": (lambda: nn.TransformerBlock(8, 2, 16), normal(2, 3, 8)),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(8, 2, 16), normal(3, 2, 8)),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2),
                           normal(3, 2, 8)),
    "TransformerDecoderLayer": (lambda: nn.TransformerDecoderLayer(8, 2, 16),
                                normals((3, 2, 8), (4, 2, 8))),
    "TransformerDecoder": (lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 2),
                           normals((3, 2, 8), (4, 2, 8))),
    "Transformer": (lambda: nn.Transformer(8, 2, 1, 1, 16), normals((3, 2, 8), (4, 2, 8))),
}

# Base classes that are not layers of their own (torch.nn has them too).
ABSTRACT = {"RNNBase", "RNNCellBase"}
