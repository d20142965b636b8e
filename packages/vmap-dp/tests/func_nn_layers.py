"""The catalogue of pullback.nn's layers that test_nn_layers.py runs under the transforms: for
each, a module factory and makers of one sample's inputs (arrays drawn from a generator).

Each sample has a leading N dim of its own where the layer wants one, so that the batch of vmap
is a dim on top of the layer's batch. Layers with random behaviour in training mode (dropout
variants, RReLU) run in eval mode here: the transforms' randomness modes are tested on their
own (test_vmap_api.py), and a per-sample loop cannot reproduce vmap's draws.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback
import pullback.nn as nn
from pullback.nn.modules.linear import NonDynamicallyQuantizableLinear

Maker = Callable[[np.random.Generator], Any]


def _f(*shape: int) -> Maker:
    return lambda rng: rng.standard_normal(shape)


def _pos(*shape: int) -> Maker:
    return lambda rng: rng.uniform(0.1, 0.9, shape)


def _i(high: int, *shape: int) -> Maker:
    return lambda rng: rng.integers(0, high, shape)


def _sign(*shape: int) -> Maker:
    """Targets of the margin losses: +1 or -1 (floats, as PyTorch takes them)."""
    return lambda rng: rng.choice([-1.0, 1.0], shape)


def _binary(*shape: int) -> Maker:
    return lambda rng: rng.integers(0, 2, shape).astype(np.float64)


def _multilabel(rows: int, classes: int) -> Maker:
    """MultiLabelMarginLoss targets: each row's class indices, ended by -1."""

    def make(rng: np.random.Generator) -> np.ndarray:
        out = np.full((rows, classes), -1, dtype=np.int64)
        for r in range(rows):
            k = int(rng.integers(1, classes))
            out[r, :k] = rng.permutation(classes)[:k]
        return out

    return make


def _pool_indices(channels: int, *pooled: int) -> Maker:
    """Indices that a max pooling of kernel 2 and stride 2 gives (one position per window of
    the unpooled input, flattened over its spatial dims), for the MaxUnpool layers."""

    def make(rng: np.random.Generator) -> np.ndarray:
        full = tuple(2 * p for p in pooled)
        grids = np.meshgrid(*[np.arange(p) for p in pooled], indexing="ij")
        coords = [2 * g + rng.integers(0, 2, (channels,) + g.shape) for g in grids]
        flat = np.ravel_multi_index(tuple(coords), full)
        return flat[None].astype(np.int64)

    return make


def _encoder_layer() -> Any:
    return nn.TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)


def _decoder_layer() -> Any:
    return nn.TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, batch_first=True)


_ACTIVATIONS = ("CELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LogSigmoid",
                "Mish", "ReLU6", "SELU", "Softshrink", "Softsign", "Tanhshrink", "GLU")

_PADS = {f"{kind}Pad{rank}d": (rank, args) for rank in (1, 2, 3)
         for kind, args in (("Zero", (1,)), ("Constant", (1, 0.5)), ("Reflection", (1,)),
                            ("Replication", (1,)), ("Circular", (1,)))}


def _spatial(rank: int, channels: int = 2, side: int = 4) -> Maker:
    return _f(1, channels, *(side,) * rank)


# name -> (module factory, per-sample input makers).
LAYERS: dict[str, tuple[Callable[[], Any], list[Maker]]] = {
    # linear and convolution
    "Linear": (lambda: nn.Linear(4, 3), [_f(2, 4)]),
    "LoRALinear": (lambda: nn.LoRALinear(4, 3, r=2), [_f(2, 4)]),
    "Bilinear": (lambda: nn.Bilinear(3, 4, 2), [_f(2, 3), _f(2, 4)]),
    "Conv2d": (lambda: nn.Conv2d(2, 3, 3, padding=1), [_f(1, 2, 5, 5)]),
    "Conv2d-grouped-strided": (lambda: nn.Conv2d(4, 6, 3, stride=2, groups=2), [_f(2, 4, 7, 7)]),
    "Conv2d-reflect": (lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
                       [_f(1, 2, 4, 4)]),
    "Conv1d": (lambda: nn.Conv1d(2, 3, 3), [_f(1, 2, 7)]),
    "Conv3d": (lambda: nn.Conv3d(2, 3, 2, padding=1), [_spatial(3, side=3)]),
    "ConvTranspose1d": (lambda: nn.ConvTranspose1d(2, 3, 3, stride=2), [_f(1, 2, 4)]),
    "ConvTranspose2d": (lambda: nn.ConvTranspose2d(2, 3, 3, stride=2), [_f(1, 2, 4, 4)]),
    "ConvTranspose3d": (lambda: nn.ConvTranspose3d(2, 2, 2, stride=2), [_spatial(3, side=2)]),
    "Unfold": (lambda: nn.Unfold(2, padding=1), [_f(1, 2, 3, 3)]),
    "Fold": (lambda: nn.Fold((3, 3), 2), [_f(1, 8, 4)]),
    # pooling
    "MaxPool1d": (lambda: nn.MaxPool1d(2), [_spatial(1)]),
    "MaxPool2d": (lambda: nn.MaxPool2d(2), [_f(1, 2, 4, 4)]),
    "MaxPool2d-indices": (lambda: nn.MaxPool2d(2, return_indices=True), [_f(1, 2, 4, 4)]),
    "MaxPool3d": (lambda: nn.MaxPool3d(2, ceil_mode=True), [_spatial(3, side=3)]),
    "MaxUnpool1d": (lambda: nn.MaxUnpool1d(2), [_f(1, 2, 2), _pool_indices(2, 2)]),
    "MaxUnpool2d": (lambda: nn.MaxUnpool2d(2), [_f(1, 2, 2, 2), _pool_indices(2, 2, 2)]),
    "MaxUnpool3d": (lambda: nn.MaxUnpool3d(2), [_f(1, 1, 1, 2, 2), _pool_indices(1, 1, 2, 2)]),
    "AvgPool1d": (lambda: nn.AvgPool1d(2), [_spatial(1)]),
    "AvgPool2d": (lambda: nn.AvgPool2d(2, padding=1), [_f(1, 2, 4, 4)]),
    "AvgPool3d": (lambda: nn.AvgPool3d(2, count_include_pad=False, padding=1),
                  [_spatial(3, side=3)]),
    "LPPool1d": (lambda: nn.LPPool1d(2, 2), [_spatial(1)]),
    "LPPool2d": (lambda: nn.LPPool2d(3, 2), [_spatial(2)]),
    "LPPool3d": (lambda: nn.LPPool3d(2, 2), [_spatial(3, channels=1)]),
    "AdaptiveAvgPool1d": (lambda: nn.AdaptiveAvgPool1d(3), [_f(1, 2, 5)]),
    "AdaptiveAvgPool2d": (lambda: nn.AdaptiveAvgPool2d(2), [_f(1, 2, 5, 5)]),
    "AdaptiveAvgPool3d": (lambda: nn.AdaptiveAvgPool3d(2), [_spatial(3, side=3)]),
    "AdaptiveMaxPool1d": (lambda: nn.AdaptiveMaxPool1d(3), [_f(1, 2, 5)]),
    "AdaptiveMaxPool2d": (lambda: nn.AdaptiveMaxPool2d(2, return_indices=True),
                          [_f(1, 2, 5, 5)]),
    "AdaptiveMaxPool3d": (lambda: nn.AdaptiveMaxPool3d(2), [_spatial(3, side=3)]),
    # resampling and rearrangement
    "Upsample": (lambda: nn.Upsample(scale_factor=2), [_f(1, 2, 3)]),
    "Upsample-bilinear": (lambda: nn.Upsample(size=(5, 4), mode="bilinear"), [_f(1, 2, 3, 3)]),
    "Upsample-bicubic-aligned": (lambda: nn.Upsample(scale_factor=1.5, mode="bicubic",
                                                     align_corners=True), [_f(1, 2, 3, 3)]),
    "Upsample-trilinear": (lambda: nn.Upsample(scale_factor=2, mode="trilinear"),
                           [_spatial(3, channels=1, side=2)]),
    "Upsample-area": (lambda: nn.Upsample(size=3, mode="area"), [_f(1, 2, 5, 5)]),
    "UpsamplingBilinear2d": (lambda: nn.UpsamplingBilinear2d(scale_factor=2), [_f(1, 2, 3, 3)]),
    "UpsamplingNearest2d": (lambda: nn.UpsamplingNearest2d(size=5), [_f(1, 2, 3, 3)]),
    "PixelShuffle": (lambda: nn.PixelShuffle(2), [_f(1, 4, 2, 3)]),
    "PixelUnshuffle": (lambda: nn.PixelUnshuffle(2), [_f(1, 1, 4, 2)]),
    "ChannelShuffle": (lambda: nn.ChannelShuffle(2), [_f(1, 4, 2, 2)]),
    **{name: ((lambda name=name, args=args: getattr(nn, name)(*args)),
              [_spatial(rank, channels=1, side=3)]) for name, (rank, args) in _PADS.items()},
    # activations
    "ReLU": (nn.ReLU, [_f(2, 5)]), "LeakyReLU": (nn.LeakyReLU, [_f(2, 5)]),
    "GELU": (nn.GELU, [_f(2, 5)]), "SiLU": (nn.SiLU, [_f(2, 5)]), "Tanh": (nn.Tanh, [_f(2, 5)]),
    "Sigmoid": (nn.Sigmoid, [_f(2, 5)]), "Softplus": (nn.Softplus, [_f(2, 5)]),
    "ELU": (nn.ELU, [_f(2, 5)]),
    **{name: (getattr(nn, name), [_f(2, 6)]) for name in _ACTIVATIONS},
    "Threshold": (lambda: nn.Threshold(0.1, 20.0), [_f(2, 5)]),
    "RReLU": (lambda: nn.RReLU().eval(), [_f(2, 5)]),
    "PReLU": (nn.PReLU, [_f(2, 5)]),
    "PReLU-channels": (lambda: nn.PReLU(3), [_f(2, 3, 2)]),
    "Softmax": (lambda: nn.Softmax(dim=-1), [_f(2, 5)]),
    "Softmin": (lambda: nn.Softmin(dim=1), [_f(2, 5)]),
    "Softmax2d": (nn.Softmax2d, [_f(1, 3, 2, 2)]),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=1), [_f(2, 5)]),
    # attention and transformers
    "NonDynamicallyQuantizableLinear": (lambda: NonDynamicallyQuantizableLinear(5, 3),
                                        [_f(2, 5)]),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(4, 2, batch_first=True),
                           [_f(1, 3, 4), _f(1, 5, 4), _f(1, 5, 4)]),
    "TransformerBlock": (lambda: nn.TransformerBlock(4, 2, dim_feedforward=8, dropout=0.0),
                         [_f(1, 3, 4)]),
    "TransformerEncoderLayer": (_encoder_layer, [_f(1, 3, 4)]),
    "TransformerDecoderLayer": (_decoder_layer, [_f(1, 2, 4), _f(1, 3, 4)]),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(_encoder_layer(), 2, norm=nn.LayerNorm(4)),
                           [_f(1, 3, 4)]),
    "TransformerDecoder": (lambda: nn.TransformerDecoder(_decoder_layer(), 1),
                           [_f(1, 2, 4), _f(1, 3, 4)]),
    "Transformer": (lambda: nn.Transformer(4, 2, 1, 1, dim_feedforward=8, dropout=0.0,
                                           batch_first=True), [_f(1, 3, 4), _f(1, 2, 4)]),
    # recurrent layers: (T, N, features) sequences
    "RNN": (lambda: nn.RNN(3, 4), [_f(4, 2, 3)]),
    "RNN-relu-2-layers-batch-first": (lambda: nn.RNN(3, 4, 2, nonlinearity="relu",
                                                     batch_first=True), [_f(2, 4, 3)]),
    "LSTM": (lambda: nn.LSTM(3, 4), [_f(4, 2, 3)]),
    "LSTM-bidirectional-projected": (lambda: nn.LSTM(3, 4, bidirectional=True, proj_size=2),
                                     [_f(4, 2, 3)]),
    "LSTM-batch-first": (lambda: nn.LSTM(3, 4, batch_first=True), [_f(2, 4, 3)]),
    "GRU": (lambda: nn.GRU(3, 4), [_f(4, 2, 3), _f(1, 2, 4)]),
    "GRU-batch-first": (lambda: nn.GRU(3, 4, bias=False, batch_first=True), [_f(2, 4, 3)]),
    "RNNBase": (lambda: nn.RNNBase("GRU", 3, 4, num_layers=2, batch_first=True),
                [_f(2, 4, 3)]),
    "RNNCell": (lambda: nn.RNNCell(3, 4), [_f(2, 3), _f(2, 4)]),
    "LSTMCell": (lambda: nn.LSTMCell(3, 4), [_f(2, 3)]),
    "GRUCell": (lambda: nn.GRUCell(3, 4), [_f(2, 3)]),
    # dropout (eval mode: see the module docstring)
    "Dropout": (lambda: nn.Dropout(0.5).eval(), [_f(2, 5)]),
    **{name: ((lambda name=name: getattr(nn, name)(0.5).eval()), [_spatial(rank, side=2)])
       for name, rank in (("Dropout1d", 1), ("Dropout2d", 2), ("Dropout3d", 3),
                          ("AlphaDropout", 1), ("FeatureAlphaDropout", 2))},
    "Embedding": (lambda: nn.Embedding(6, 3), [_i(6, 2, 4)]),
    "EmbeddingBag": (lambda: nn.EmbeddingBag(6, 3), [_i(6, 2, 4)]),
    "EmbeddingBag-sum": (lambda: nn.EmbeddingBag(6, 3, mode="sum"), [_i(6, 2, 4)]),
    "EmbeddingBag-max": (lambda: nn.EmbeddingBag(6, 3, mode="max"), [_i(6, 2, 4)]),
    # normalization
    "LayerNorm": (lambda: nn.LayerNorm(5), [_f(2, 5)]),
    "RMSNorm": (lambda: nn.RMSNorm(5), [_f(2, 5)]),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), [_f(2, 4, 3)]),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(3).eval(), [_f(2, 3)]),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(3).eval(), [_f(2, 3, 2, 2)]),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(2).eval(), [_spatial(3, side=2)]),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(3, affine=True), [_f(2, 3, 4)]),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(3, affine=True), [_f(2, 3, 2, 2)]),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(2, affine=True), [_spatial(3, side=2)]),
    "LocalResponseNorm": (lambda: nn.LocalResponseNorm(3), [_f(1, 4, 3, 3)]),
    # shape
    "Identity": (nn.Identity, [_f(2, 5)]),
    "Flatten": (nn.Flatten, [_f(2, 3, 2)]),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), [_f(2, 6)]),
    # wrappers: on the CPU, DataParallel is its module
    "DataParallel": (lambda: nn.DataParallel(nn.Linear(4, 3)), [_f(2, 4)]),
    # distances
    "CosineSimilarity": (nn.CosineSimilarity, [_f(2, 4), _f(2, 4)]),
    "PairwiseDistance": (nn.PairwiseDistance, [_f(2, 4), _f(2, 4)]),
    # losses
    "MSELoss": (nn.MSELoss, [_f(2, 3), _f(2, 3)]),
    "L1Loss": (nn.L1Loss, [_f(2, 3), _f(2, 3)]),
    "HuberLoss": (nn.HuberLoss, [_f(2, 3), _f(2, 3)]),
    "SmoothL1Loss": (nn.SmoothL1Loss, [_f(2, 3), _f(2, 3)]),
    "CrossEntropyLoss": (nn.CrossEntropyLoss, [_f(2, 5), _i(5, 2)]),
    "CrossEntropyLoss-smoothing": (lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
                                   [_f(2, 5), _i(5, 2)]),
    "NLLLoss": (nn.NLLLoss, [_f(2, 5), _i(5, 2)]),
    "BCELoss": (nn.BCELoss, [_pos(2, 3), _pos(2, 3)]),
    "BCEWithLogitsLoss": (nn.BCEWithLogitsLoss, [_f(2, 3), _pos(2, 3)]),
    "KLDivLoss": (lambda: nn.KLDivLoss(reduction="batchmean"), [_f(2, 3), _pos(2, 3)]),
    "GaussianNLLLoss": (nn.GaussianNLLLoss, [_f(2, 3), _f(2, 3), _pos(2, 3)]),
    "PoissonNLLLoss": (nn.PoissonNLLLoss, [_f(2, 3), _pos(2, 3)]),
    "CosineEmbeddingLoss": (lambda: nn.CosineEmbeddingLoss(margin=0.1),
                            [_f(3, 4), _f(3, 4), _sign(3)]),
    "HingeEmbeddingLoss": (nn.HingeEmbeddingLoss, [_f(2, 3), _sign(2, 3)]),
    "MarginRankingLoss": (lambda: nn.MarginRankingLoss(margin=0.2), [_f(3), _f(3), _sign(3)]),
    "SoftMarginLoss": (nn.SoftMarginLoss, [_f(2, 3), _sign(2, 3)]),
    "MultiLabelMarginLoss": (nn.MultiLabelMarginLoss, [_f(2, 4), _multilabel(2, 4)]),
    "MultiLabelSoftMarginLoss": (nn.MultiLabelSoftMarginLoss, [_f(2, 4), _binary(2, 4)]),
    "MultiMarginLoss": (nn.MultiMarginLoss, [_f(2, 4), _i(4, 2)]),
    "MultiMarginLoss-squared": (lambda: nn.MultiMarginLoss(p=2, margin=0.5), [_f(2, 4), _i(4, 2)]),
    "TripletMarginLoss": (nn.TripletMarginLoss, [_f(2, 4), _f(2, 4), _f(2, 4)]),
    "TripletMarginWithDistanceLoss": (lambda: nn.TripletMarginWithDistanceLoss(swap=True),
                                      [_f(2, 4), _f(2, 4), _f(2, 4)]),
}

# Modules that are bases or containers, not layers with a computation of their own.
NOT_LAYERS = {"Module", "Sequential", "ModuleList", "ModuleDict", "Parameter",
              "RNNCellBase"}  # the cells' base: its subclasses define the step

def _ctc_inputs(steps: int = 5, batch: int = 2, classes: int = 4, length: int = 2) -> list[Maker]:
    return [lambda rng: np.log(rng.dirichlet(np.ones(classes), (steps, batch))),
            lambda rng: rng.integers(1, classes, (batch, length)),
            lambda rng: np.full(batch, steps), lambda rng: np.full(batch, length)]


# Layers the transforms refuse: name -> (factory, sample input makers, a pattern of the error).
# CTCLoss runs as a custom autograd.Function whose forward reads the targets and lengths as
# host arrays, which vmap hands out with every sample in them: ctc_loss's own shape checks
# refuse the batch (an op with batch and jvp rules would lift this).
REFUSED: dict[str, tuple[Callable[[], Any], list[Maker], str]] = {
    "CTCLoss": (nn.CTCLoss, _ctc_inputs(), "ctc_loss"),
}

# Layers whose parameters carry PyTorch's names: per-sample gradients against torch.func too.
# name -> the same layer built from ``torch.nn`` (passed in, so that this module needs no torch).
TORCH_TWINS: dict[str, Callable[[Any], Any]] = {
    "Bilinear": lambda tnn: tnn.Bilinear(3, 4, 2),
    "Conv1d": lambda tnn: tnn.Conv1d(2, 3, 3),
    "Conv2d-reflect": lambda tnn: tnn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
    "ConvTranspose2d": lambda tnn: tnn.ConvTranspose2d(2, 3, 3, stride=2),
    "Embedding": lambda tnn: tnn.Embedding(6, 3),
    "EmbeddingBag": lambda tnn: tnn.EmbeddingBag(6, 3),
    "EmbeddingBag-max": lambda tnn: tnn.EmbeddingBag(6, 3, mode="max"),
    "LayerNorm": lambda tnn: tnn.LayerNorm(5),
    "RMSNorm": lambda tnn: tnn.RMSNorm(5),
    "GroupNorm": lambda tnn: tnn.GroupNorm(2, 4),
    "MultiheadAttention": lambda tnn: tnn.MultiheadAttention(4, 2, batch_first=True),
    "PReLU": lambda tnn: tnn.PReLU(),
    "Conv3d": lambda tnn: tnn.Conv3d(2, 3, 2, padding=1),
    "ConvTranspose1d": lambda tnn: tnn.ConvTranspose1d(2, 3, 3, stride=2),
    "ConvTranspose3d": lambda tnn: tnn.ConvTranspose3d(2, 2, 2, stride=2),
    "PReLU-channels": lambda tnn: tnn.PReLU(3),
    "InstanceNorm2d": lambda tnn: tnn.InstanceNorm2d(3, affine=True),
    "RNN": lambda tnn: tnn.RNN(3, 4),
    "LSTM": lambda tnn: tnn.LSTM(3, 4),
    "LSTM-bidirectional-projected": lambda tnn: tnn.LSTM(3, 4, bidirectional=True, proj_size=2),
    "GRU": lambda tnn: tnn.GRU(3, 4),
    "RNNCell": lambda tnn: tnn.RNNCell(3, 4),
    "LSTMCell": lambda tnn: tnn.LSTMCell(3, 4),
    "GRUCell": lambda tnn: tnn.GRUCell(3, 4),
    "TransformerEncoderLayer": lambda tnn: tnn.TransformerEncoderLayer(
        4, 2, dim_feedforward=8, dropout=0.0, batch_first=True),
    "TransformerDecoderLayer": lambda tnn: tnn.TransformerDecoderLayer(
        4, 2, dim_feedforward=8, dropout=0.0, batch_first=True),
    "Transformer": lambda tnn: tnn.Transformer(4, 2, 1, 1, dim_feedforward=8, dropout=0.0,
                                               batch_first=True),
}

# Twins that torch.func cannot vmap: with no initial state given, torch's layer writes in place
# into the zero state it makes, which is not batched ("output with shape [2, 4] doesn't match
# the broadcast shape [3, 2, 4]", torch 2.13). Their reference is a loop of torch backward passes.
TORCH_FUNC_FAILS = {"RNN", "LSTM", "LSTM-bidirectional-projected", "LSTMCell", "GRUCell"}


def _functionals() -> dict[str, tuple[Callable[..., Any], list[tuple[int, ...]]]]:
    F = nn.functional
    return {
        "grid_sample": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                        [(1, 2, 4, 4), (1, 3, 3, 2)]),
        "grid_sample-nearest-border": (
            lambda x, g: F.grid_sample(x, g, mode="nearest", padding_mode="border",
                                       align_corners=True), [(1, 2, 4, 4), (1, 3, 3, 2)]),
        "grid_sample-bicubic-reflection": (
            lambda x, g: F.grid_sample(x, g, mode="bicubic", padding_mode="reflection",
                                       align_corners=False), [(1, 2, 4, 4), (1, 3, 3, 2)]),
        "grid_sample-3d": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                           [(1, 1, 3, 3, 3), (1, 2, 2, 2, 3)]),
        "affine_grid": (lambda theta: F.affine_grid(theta, (1, 2, 3, 4), align_corners=False),
                        [(1, 2, 3)]),
        "pdist": (F.pdist, [(4, 3)]),
        "normalize": (lambda x: F.normalize(x, dim=1), [(2, 3)]),
        "embedding_bag-offsets": (
            lambda w: F.embedding_bag(pullback.tensor([1, 2, 4, 5, 0]), w,
                                      pullback.tensor([0, 2])), [(6, 3)]),
    }


# nn.functional's composites that no layer wraps: name -> (function, one sample's input shapes).
FUNCTIONALS = _functionals()
