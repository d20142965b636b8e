"""Every layer class of pullback.nn (``pullback.nn.modules.__all__``) as an export case: how to
build it and its example inputs. test_export_onnx_layers.py exports each at every opset and
runs it in onnxruntime; a class without a case here fails that test, so a new layer cannot be
forgotten.

A case is built the way the layer is used in inference: a loss takes its prediction and its
target (integer targets are int64 inputs of the graph), a recurrent layer its sequence, a
decoder its target and memory. Where a layer has configurations that export differently
(directions, projections, modes), each is a case of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.nn as nn

Inputs = Callable[[np.random.Generator, int], list[np.ndarray]]


@dataclass
class LayerCase:
    """One layer configuration: ``make()`` builds it, ``inputs(rng, batch)`` makes its NumPy
    inputs with ``batch`` rows on the batch axis (the first axis unless ``batch_axis`` says
    otherwise; None when the layer's inputs have no batch axis: exported with a static one)."""

    id: str
    layer: str  # the class name in pullback.nn.modules.__all__
    make: Callable[[], Any]
    inputs: Inputs
    batch_axis: int | None = 0
    tolerance: float = 1e-5
    keywords: dict[str, Any] = field(default_factory=dict)

    def tensors(self, batch: int, seed: int = 0) -> tuple[pb.Tensor, ...]:
        rng = np.random.default_rng(seed)
        return tuple(pb.tensor(a if a.dtype.kind != "f" else a.astype(np.float32))
                     for a in self.inputs(rng, batch))


def normal(*shape: int, scale: float = 1.0) -> Inputs:
    """One float input of ``shape`` after the batch axis."""
    return lambda rng, b: [rng.standard_normal((b,) + shape) * scale]


def positive(*shape: int) -> Inputs:
    return lambda rng, b: [rng.uniform(0.5, 2.0, (b,) + shape)]


def several(*makers: Inputs) -> Inputs:
    return lambda rng, b: [a for make in makers for a in make(rng, b)]


def classes(high: int, *shape: int) -> Inputs:
    return lambda rng, b: [rng.integers(0, high, (b,) + shape)]


def signs(*shape: int) -> Inputs:
    return lambda rng, b: [np.where(rng.random((b,) + shape) > 0.5, 1.0, -1.0)]


def probabilities(*shape: int) -> Inputs:
    return lambda rng, b: [rng.uniform(0.05, 0.95, (b,) + shape)]


def log_probabilities(*shape: int) -> Inputs:
    def make(rng: np.random.Generator, b: int) -> list[np.ndarray]:
        x = rng.standard_normal((b,) + shape)
        return [x - np.log(np.exp(x).sum(-1, keepdims=True))]
    return make


def multilabel(c: int) -> Inputs:
    """MultiLabelMarginLoss's targets: class indices ended by -1."""
    def make(rng: np.random.Generator, b: int) -> list[np.ndarray]:
        target = -np.ones((b, c), dtype=np.int64)
        for i in range(b):
            k = int(rng.integers(1, c))
            target[i, :k] = rng.choice(c, k, replace=False)
        return [target]
    return make


def ctc_inputs(t: int = 8, c: int = 5, s: int = 3) -> Inputs:
    """CTC's (T, N, C) log-probabilities, (N, S) targets and the two length vectors."""
    def make(rng: np.random.Generator, b: int) -> list[np.ndarray]:
        logits = rng.standard_normal((t, b, c))
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        targets = rng.integers(1, c, (b, s))
        return [log_probs, targets, np.full(b, t, np.int64),
                rng.integers(1, s + 1, b).astype(np.int64)]
    return make


def pooled(rank: int, channels: int, size: int) -> Inputs:
    """MaxUnpool's inputs: a 2-wide max pooling's values and flat indices (computed here)."""
    def make(rng: np.random.Generator, b: int) -> list[np.ndarray]:
        x = pb.tensor(rng.standard_normal((b, channels) + (size,) * rank).astype(np.float32))
        pool = {1: nn.functional.max_pool1d, 2: nn.functional.max_pool2d,
                3: nn.functional.max_pool3d}[rank]
        values, indices = pool(x, 2, return_indices=True)
        return [values.numpy(), indices.numpy()]
    return make


def _case(layer: str, make: Callable[[], Any], inputs: Inputs, variant: str = "",
          **options: Any) -> LayerCase:
    return LayerCase(f"{layer}-{variant}" if variant else layer, layer, make, inputs, **options)


def _activations() -> list[LayerCase]:
    arguments: dict[str, tuple[Any, ...]] = {"Threshold": (0.1, -2.0), "Softmax": (-1,),
                                             "Softmin": (-1,), "LogSoftmax": (-1,),
                                             "GLU": (-1,), "Hardtanh": (-0.5, 2.0)}
    names = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh",
             "LeakyReLU", "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "RReLU", "ReLU", "ReLU6",
             "SELU", "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus",
             "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold"]
    return [_case(n, lambda n=n: getattr(nn, n)(*arguments.get(n, ())), normal(3, 4, 6, scale=3))
            for n in names] + [
        _case("GELU", lambda: nn.GELU(approximate="tanh"), normal(5, scale=3), "tanh"),
        _case("PReLU", lambda: nn.PReLU(3, init=0.1), normal(3, 4, 5), "per-channel"),
    ]


def _layers() -> list[LayerCase]:
    return [
        # linear, embedding, shapes
        _case("Linear", lambda: nn.Linear(6, 4), normal(6)),
        _case("Linear", lambda: nn.Linear(6, 4, bias=False), normal(3, 6), "3d-nobias"),
        _case("Bilinear", lambda: nn.Bilinear(3, 4, 5), several(normal(3), normal(4))),
        _case("Identity", lambda: nn.Identity(), normal(4)),
        _case("Flatten", lambda: nn.Flatten(), normal(2, 3, 4)),
        _case("Unflatten", lambda: nn.Unflatten(1, (3, 4)), normal(12)),
        _case("Embedding", lambda: nn.Embedding(10, 4, padding_idx=0), classes(10, 5)),
        _case("EmbeddingBag", lambda: nn.EmbeddingBag(10, 4), classes(10, 5)),
        _case("EmbeddingBag", lambda: nn.EmbeddingBag(10, 4, mode="max", padding_idx=0),
              classes(10, 5), "max-padding"),
        _case("EmbeddingBag", lambda: nn.EmbeddingBag(10, 4, padding_idx=0), classes(10, 5),
              "mean-padding"),
        # convolutions
        _case("Conv1d", lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1), normal(3, 9)),
        _case("Conv2d", lambda: nn.Conv2d(4, 6, 3, padding=1, groups=2), normal(4, 7, 6)),
        _case("Conv2d", lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
              normal(2, 5, 6), "reflect"),
        _case("Conv3d", lambda: nn.Conv3d(2, 3, 2, stride=(1, 2, 1), padding=1),
              normal(2, 4, 5, 4)),
        _case("ConvTranspose1d", lambda: nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1,
                                                            output_padding=1), normal(3, 5)),
        _case("ConvTranspose2d", lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                                            groups=2, dilation=2),
              normal(4, 5, 4)),
        _case("ConvTranspose2d", lambda: nn.ConvTranspose2d(2, 3, (2, 3), bias=False),
              normal(2, 3, 3), "nobias"),
        _case("ConvTranspose3d", lambda: nn.ConvTranspose3d(2, 3, 2, stride=2), normal(2, 3, 2, 3)),
        _case("Fold", lambda: nn.Fold((5, 6), 3), normal(18, 12)),
        _case("Unfold", lambda: nn.Unfold(3, padding=1, stride=2), normal(2, 5, 6)),
        # pooling
        _case("MaxPool1d", lambda: nn.MaxPool1d(3, stride=2, padding=1), normal(3, 9)),
        _case("MaxPool2d", lambda: nn.MaxPool2d(3, stride=2, ceil_mode=True), normal(2, 8, 7)),
        _case("MaxPool3d", lambda: nn.MaxPool3d(2), normal(2, 4, 5, 4)),
        _case("AvgPool1d", lambda: nn.AvgPool1d(3, stride=2, padding=1), normal(3, 9)),
        _case("AvgPool2d", lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True), normal(2, 6, 7)),
        _case("AvgPool3d", lambda: nn.AvgPool3d(2, padding=1, count_include_pad=False),
              normal(2, 4, 5, 4)),
        _case("LPPool1d", lambda: nn.LPPool1d(2, 3, stride=2), normal(3, 9)),
        _case("LPPool2d", lambda: nn.LPPool2d(3, (2, 3)), positive(2, 6, 7)),
        _case("LPPool3d", lambda: nn.LPPool3d(2, 2), normal(2, 4, 4, 4)),
        _case("AdaptiveAvgPool1d", lambda: nn.AdaptiveAvgPool1d(4), normal(3, 9)),
        _case("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d((3, 2)), normal(2, 7, 5)),
        _case("AdaptiveAvgPool2d", lambda: nn.AdaptiveAvgPool2d(1), normal(2, 7, 5), "global"),
        _case("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d((2, 3, 2)), normal(2, 5, 7, 4)),
        _case("AdaptiveMaxPool1d", lambda: nn.AdaptiveMaxPool1d(4), normal(3, 9)),
        _case("AdaptiveMaxPool2d", lambda: nn.AdaptiveMaxPool2d((3, 4)), normal(2, 7, 9)),
        _case("AdaptiveMaxPool3d", lambda: nn.AdaptiveMaxPool3d((2, 3, 2)), normal(2, 5, 7, 4)),
        _case("MaxUnpool1d", lambda: nn.MaxUnpool1d(2), pooled(1, 3, 8)),
        _case("MaxUnpool2d", lambda: nn.MaxUnpool2d(2), pooled(2, 2, 6)),
        _case("MaxUnpool3d", lambda: nn.MaxUnpool3d(2), pooled(3, 2, 4)),
        # resampling, padding, shuffles
        _case("Upsample", lambda: nn.Upsample(scale_factor=2, mode="nearest"), normal(2, 3, 4)),
        _case("Upsample", lambda: nn.Upsample(size=(5, 7), mode="bilinear"), normal(2, 3, 4),
              "bilinear"),
        _case("Upsample", lambda: nn.Upsample(scale_factor=1.5, mode="bicubic",
                                              align_corners=True), normal(2, 3, 4), "bicubic"),
        _case("Upsample", lambda: nn.Upsample(scale_factor=2, mode="linear"), normal(2, 5),
              "linear"),
        _case("Upsample", lambda: nn.Upsample(size=(3, 4, 2), mode="trilinear"),
              normal(2, 2, 3, 4), "trilinear"),
        _case("UpsamplingNearest2d", lambda: nn.UpsamplingNearest2d(scale_factor=3),
              normal(2, 3, 4)),
        _case("UpsamplingBilinear2d", lambda: nn.UpsamplingBilinear2d(size=(5, 7)),
              normal(2, 3, 4)),
        _case("PixelShuffle", lambda: nn.PixelShuffle(2), normal(8, 3, 4)),
        _case("PixelUnshuffle", lambda: nn.PixelUnshuffle(2), normal(3, 4, 6)),
        _case("ChannelShuffle", lambda: nn.ChannelShuffle(3), normal(6, 2, 3)),
        _case("ZeroPad1d", lambda: nn.ZeroPad1d((-1, 2)), normal(3, 5)),
        _case("ZeroPad2d", lambda: nn.ZeroPad2d((1, 2, 0, 3)), normal(2, 3, 4)),
        _case("ZeroPad3d", lambda: nn.ZeroPad3d((1, 0, 0, 2, 1, 1)), normal(2, 2, 3, 2)),
        _case("ConstantPad1d", lambda: nn.ConstantPad1d((2, 1), 0.5), normal(3, 4)),
        _case("ConstantPad2d", lambda: nn.ConstantPad2d((2, -1, 1, 1), -1.0), normal(2, 3, 4)),
        _case("ConstantPad3d", lambda: nn.ConstantPad3d(1, 2.5), normal(2, 2, 3, 2)),
        _case("ReflectionPad1d", lambda: nn.ReflectionPad1d((3, 1)), normal(3, 5)),
        _case("ReflectionPad2d", lambda: nn.ReflectionPad2d((1, 2, 2, 0)), normal(2, 4, 5)),
        _case("ReflectionPad3d", lambda: nn.ReflectionPad3d(1), normal(2, 3, 3, 4)),
        _case("ReplicationPad1d", lambda: nn.ReplicationPad1d((2, 3)), normal(3, 4)),
        _case("ReplicationPad2d", lambda: nn.ReplicationPad2d((1, 2, 1, 0)), normal(2, 3, 4)),
        _case("ReplicationPad3d", lambda: nn.ReplicationPad3d((1, 0, 2, 1, 0, 1)),
              normal(2, 2, 3, 2)),
        _case("CircularPad1d", lambda: nn.CircularPad1d((2, 1)), normal(3, 4)),
        _case("CircularPad2d", lambda: nn.CircularPad2d((2, 1, 1, 1)), normal(2, 3, 4)),
        _case("CircularPad3d", lambda: nn.CircularPad3d(1), normal(1, 3, 3, 3)),
        # normalization, dropout (evaluation: the identity), distances
        _case("BatchNorm1d", lambda: nn.BatchNorm1d(4), normal(4)),
        _case("BatchNorm2d", lambda: nn.BatchNorm2d(3), normal(3, 4, 5)),
        _case("BatchNorm3d", lambda: nn.BatchNorm3d(2), normal(2, 3, 2, 4)),
        _case("InstanceNorm1d", lambda: nn.InstanceNorm1d(3, affine=True), normal(3, 6)),
        _case("InstanceNorm2d", lambda: nn.InstanceNorm2d(3), normal(3, 4, 5)),
        _case("InstanceNorm2d", lambda: nn.InstanceNorm2d(3, track_running_stats=True),
              normal(3, 4, 5), "running"),
        _case("InstanceNorm3d", lambda: nn.InstanceNorm3d(2, affine=True), normal(2, 3, 2, 4)),
        _case("GroupNorm", lambda: nn.GroupNorm(2, 6), normal(6, 3, 4)),
        _case("LayerNorm", lambda: nn.LayerNorm((4, 5)), normal(3, 4, 5)),
        _case("RMSNorm", lambda: nn.RMSNorm(5), normal(3, 5)),
        _case("LocalResponseNorm", lambda: nn.LocalResponseNorm(3), normal(5, 4, 3, scale=3)),
        _case("Dropout", lambda: nn.Dropout(0.3), normal(5)),
        _case("Dropout1d", lambda: nn.Dropout1d(0.3), normal(3, 5)),
        _case("Dropout2d", lambda: nn.Dropout2d(0.3), normal(3, 4, 5)),
        _case("Dropout3d", lambda: nn.Dropout3d(0.3), normal(3, 2, 4, 5)),
        _case("AlphaDropout", lambda: nn.AlphaDropout(0.3), normal(5)),
        _case("FeatureAlphaDropout", lambda: nn.FeatureAlphaDropout(0.3), normal(3, 4)),
        _case("CosineSimilarity", lambda: nn.CosineSimilarity(), several(normal(5), normal(5))),
        _case("PairwiseDistance", lambda: nn.PairwiseDistance(p=3.0),
              several(normal(5), normal(5))),
    ]


def _sequence_layers() -> list[LayerCase]:
    """Recurrent layers (time-major unless batch_first: the batch is axis 1), cells, attention
    and the Transformer family."""
    def enc() -> Any:
        return nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)

    def dec() -> Any:
        return nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0)

    time_major = {"batch_axis": 1}
    sequence = lambda *shape: (lambda rng, b: [rng.standard_normal((shape[0], b) + shape[1:])])  # noqa: E731
    return [
        _case("RNN", lambda: nn.RNN(4, 6), sequence(5, 4), **time_major),
        _case("RNN", lambda: nn.RNN(4, 6, 2, nonlinearity="relu", batch_first=True,
                                    bidirectional=True), normal(5, 4), "relu-2-layers-bidi"),
        _case("LSTM", lambda: nn.LSTM(4, 6), sequence(5, 4), **time_major),
        _case("LSTM", lambda: nn.LSTM(4, 6, 2, batch_first=True, bidirectional=True),
              normal(5, 4), "2-layers-bidi"),
        _case("LSTM", lambda: nn.LSTM(4, 6, proj_size=3), sequence(5, 4), "projection",
              **time_major),
        _case("GRU", lambda: nn.GRU(4, 6), sequence(5, 4), **time_major),
        _case("GRU", lambda: nn.GRU(4, 6, 2, batch_first=True, bidirectional=True, bias=False),
              normal(5, 4), "2-layers-bidi-nobias"),
        _case("RNNBase", lambda: nn.RNNBase("GRU", 4, 6), sequence(5, 4), **time_major),
        _case("RNNCell", lambda: nn.RNNCell(4, 6), normal(4)),
        _case("LSTMCell", lambda: nn.LSTMCell(4, 6), normal(4)),
        _case("GRUCell", lambda: nn.GRUCell(4, 6), normal(4)),
        _case("MultiheadAttention", lambda: nn.MultiheadAttention(8, 2, batch_first=True),
              several(normal(5, 8), normal(6, 8), normal(6, 8))),
        _case("MultiHeadAttention", lambda: nn.MultiHeadAttention(8, 2),
              several(normal(5, 8), normal(5, 8), normal(5, 8))),
        _case("TransformerBlock", lambda: nn.TransformerBlock(8, 2, 16, dropout=0.0),
              normal(5, 8)),
        _case("TransformerEncoderLayer", enc, sequence(5, 8), **time_major),
        _case("TransformerDecoderLayer", dec, several(sequence(4, 8), sequence(5, 8)),
              **time_major),
        _case("TransformerEncoder", lambda: nn.TransformerEncoder(enc(), 2,
                                                                  enable_nested_tensor=False),
              sequence(5, 8), **time_major),
        _case("TransformerDecoder", lambda: nn.TransformerDecoder(dec(), 2),
              several(sequence(4, 8), sequence(5, 8)), **time_major),
        _case("Transformer", lambda: nn.Transformer(8, 2, 1, 1, 16, dropout=0.0),
              several(sequence(5, 8), sequence(4, 8)), **time_major),
    ]


def _losses() -> list[LayerCase]:
    scores = normal(5)
    return [
        _case("MSELoss", lambda: nn.MSELoss(), several(scores, scores)),
        _case("L1Loss", lambda: nn.L1Loss(reduction="sum"), several(scores, scores)),
        _case("HuberLoss", lambda: nn.HuberLoss(delta=0.5), several(scores, scores)),
        _case("SmoothL1Loss", lambda: nn.SmoothL1Loss(reduction="none"), several(scores, scores)),
        _case("BCELoss", lambda: nn.BCELoss(), several(probabilities(5), probabilities(5))),
        _case("BCEWithLogitsLoss", lambda: nn.BCEWithLogitsLoss(pos_weight=pb.ones(5) * 2),
              several(scores, probabilities(5))),
        _case("CrossEntropyLoss", lambda: nn.CrossEntropyLoss(), several(scores, classes(5))),
        _case("CrossEntropyLoss", lambda: nn.CrossEntropyLoss(label_smoothing=0.1,
                                                              reduction="none"),
              several(normal(5, 3), classes(5, 3)), "smoothing-2d"),
        _case("NLLLoss", lambda: nn.NLLLoss(weight=pb.arange(1, 6, dtype="float32")),
              several(log_probabilities(5), classes(5))),
        _case("KLDivLoss", lambda: nn.KLDivLoss(reduction="batchmean"),
              several(log_probabilities(5), probabilities(5))),
        _case("GaussianNLLLoss", lambda: nn.GaussianNLLLoss(),
              several(scores, scores, positive(5))),
        _case("PoissonNLLLoss", lambda: nn.PoissonNLLLoss(), several(scores, positive(5))),
        _case("CosineEmbeddingLoss", lambda: nn.CosineEmbeddingLoss(0.2),
              several(scores, scores, signs())),
        _case("HingeEmbeddingLoss", lambda: nn.HingeEmbeddingLoss(), several(scores, signs(5))),
        _case("MarginRankingLoss", lambda: nn.MarginRankingLoss(0.5),
              several(normal(), normal(), signs())),
        _case("SoftMarginLoss", lambda: nn.SoftMarginLoss(), several(scores, signs(5))),
        _case("MultiLabelSoftMarginLoss", lambda: nn.MultiLabelSoftMarginLoss(),
              several(scores, probabilities(5))),
        _case("MultiLabelMarginLoss", lambda: nn.MultiLabelMarginLoss(),
              several(scores, multilabel(5))),
        _case("MultiMarginLoss", lambda: nn.MultiMarginLoss(p=2, margin=0.5),
              several(scores, classes(5))),
        _case("TripletMarginLoss", lambda: nn.TripletMarginLoss(swap=True),
              several(scores, scores, scores)),
        _case("TripletMarginWithDistanceLoss", lambda: nn.TripletMarginWithDistanceLoss(),
              several(scores, scores, scores)),
    ]


CASES: list[LayerCase] = _activations() + _layers() + _sequence_layers() + _losses()

# What does not export, why, and what the error says: (case, reason, pattern of the message).
NOT_EXPORTABLE: list[tuple[LayerCase, str, str]] = [
    (_case("CTCLoss", lambda: nn.CTCLoss(), ctc_inputs(), batch_axis=None),
     "its forward-backward recursion runs on raw arrays inside an autograd Function (the "
     "alignment over the lengths' values); ONNX has no CTC operator", "Function _CTC"),
    (_case("EmbeddingBag", lambda: nn.EmbeddingBag(10, 4),
           lambda rng, b: [rng.integers(0, 10, 3 * b), np.arange(0, 3 * b, 3)], "offsets",
           batch_axis=None),
     "a 1-d input's bags are cut where the offsets' values say (a graph has one shape)",
     r"numpy\(\) reads the value of a traced tensor"),
]
# Classes of pullback.nn.modules.__all__ that are no layer on their own.
BASE_CLASSES = {"RNNCellBase": "the base of RNNCell, LSTMCell and GRUCell (no forward)"}
