"""Neural-network operators: convolutions (1 to 3 spatial axes, transposed too), the
normalizations (Batch, Instance, Layer, Group, RMS, LRN, Lp, mean-variance), the softmax
family and ``Dropout``."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.tensor import Tensor

from . import NodeContext, converter, ints, optional, scalar, text
from .pool import geometry
from .shape import pad

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _spatial_function(table: dict[int, Any], x: Tensor, op: str) -> Any:
    fn = table.get(x.ndim - 2)
    if fn is None:
        raise NotImplementedError(f"{op} over {x.ndim - 2} spatial axes")
    return fn


@converter("Conv")
def _conv(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, w, b = ins[0], ins[1], optional(ins, 2)
    conv = _spatial_function(_CONV, x, "Conv")
    kernel, strides, dilations, begin, end = geometry(x, attrs, list(w.shape[2:]))
    padding: Any = begin
    if begin != end:  # asymmetric: pad first
        spatial = x.ndim - 2
        x, padding = pad(x, [0, 0] + begin, [0, 0] + end), [0] * spatial
    return [conv(x, w, b, stride=strides, padding=padding, dilation=dilations,
                 groups=int(attrs.get("group", 1)))]


@converter("CausalConvWithState")
def _causal_conv_with_state(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                            ) -> list[Any]:
    """A depthwise 1-d convolution over the past state and the input (no future tap), and the
    last ``k - 1`` steps as the next state."""
    x, w, b, past = ins[0], ins[1], optional(ins, 2), optional(ins, 3)
    k = w.shape[2]
    if past is None:
        past = pb.zeros((x.shape[0], x.shape[1], k - 1), dtype=x.dtype)
    padded = pb.cat([past, x], axis=2)
    y = F.conv1d(padded, w, b, groups=x.shape[1])
    if text(attrs.get("activation", "none")) in ("silu", "swish"):
        y = (y.to(np.float32) * pb.sigmoid(y.to(np.float32))).to(x.dtype)
    return [y, padded.narrow(2, padded.shape[2] - (k - 1), k - 1)]


@converter("ConvTranspose")
def _conv_transpose(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Computed unpadded, then cropped by ``pads`` (or to ``output_shape``); the bias is
    added last, so that zeros grown by a negative crop get it too."""
    x, w, b = ins[0], ins[1], optional(ins, 2)
    conv = _spatial_function(_CONV_TRANSPOSE, x, "ConvTranspose")
    spatial = x.ndim - 2
    kernel = list(attrs.get("kernel_shape", w.shape[2:]))
    strides = list(attrs.get("strides", [1] * spatial))
    dilations = list(attrs.get("dilations", [1] * spatial))
    extra = list(attrs.get("output_padding", [0] * spatial))
    full = [s * (n - 1) + e + (k - 1) * d + 1
            for n, s, e, k, d in zip(x.shape[2:], strides, extra, kernel, dilations)]
    auto_pad = text(attrs.get("auto_pad", "NOTSET"))
    if "pads" in attrs:  # the pads decide; output_shape is then only a check
        pads = list(attrs["pads"])
        begin, end = pads[:spatial], pads[spatial:]
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        target = list(attrs["output_shape"])[-spatial:] if "output_shape" in attrs else \
            [n * s for n, s in zip(x.shape[2:], strides)]
        totals = [f - t for f, t in zip(full, target)]
        if auto_pad == "SAME_UPPER":
            begin, end = [t // 2 for t in totals], [t - t // 2 for t in totals]
        else:
            begin, end = [t - t // 2 for t in totals], [t // 2 for t in totals]
    elif "output_shape" in attrs:  # cut (or grown) at the end
        target = list(attrs["output_shape"])[-spatial:]
        begin, end = [0] * spatial, [f - t for f, t in zip(full, target)]
    else:
        begin, end = [0] * spatial, [0] * spatial
    y = conv(x, w, None, stride=strides, padding=0, output_padding=0,
             groups=int(attrs.get("group", 1)), dilation=dilations)
    # the product is ``full`` less output_padding: grow that, crop the pads
    y = pad(y, [0, 0] + [-p for p in begin], [0, 0] + [e - p for p, e in zip(end, extra)])
    if b is not None:
        y = y + b.reshape((1, -1) + (1,) * spatial)
    return [y]


def _stats(x: Tensor, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    return mean, (centered * centered).mean(axis=axes, keepdims=True)


def _stash(x: Tensor, attrs: dict[str, Any]) -> Tensor:
    """``stash_type=1`` (the default) computes the statistics in float32."""
    if int(attrs.get("stash_type", 1)) == 1 and x.dtype.kind == "f" and x.dtype.itemsize < 4:
        return x.to(np.float32)
    return x


@converter("BatchNormalization")
def _batch_norm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, scale, bias, mean, var = ins[:5]
    eps = float(attrs.get("epsilon", 1e-5))
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if not attrs.get("training_mode", 0):
        return [F.batch_norm(x, mean, var, scale, bias, training=False, eps=eps)]
    momentum = float(attrs.get("momentum", 0.9))
    axes = (0,) + tuple(range(2, x.ndim))
    batch_mean, batch_var = _stats(x, axes)
    y = (x - batch_mean) / pb.sqrt(batch_var + eps) * scale.reshape(shape) + bias.reshape(shape)
    running_mean = mean * momentum + batch_mean.reshape((-1,)) * (1 - momentum)
    running_var = var * momentum + batch_var.reshape((-1,)) * (1 - momentum)
    return [y, running_mean, running_var]


@converter("InstanceNormalization")
def _instance_norm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, scale, bias = ins
    shape = (1, -1) + (1,) * (x.ndim - 2)
    mean, var = _stats(x, tuple(range(2, x.ndim)))
    eps = float(attrs.get("epsilon", 1e-5))
    return [(x - mean) / pb.sqrt(var + eps) * scale.reshape(shape) + bias.reshape(shape)]


@converter("LayerNormalization")
def _layer_norm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Y, and when the node names them, the Mean and InvStdDev (the reduced axes kept as 1)."""
    x, scale, bias = ins[0], ins[1], optional(ins, 2)
    axis = int(attrs.get("axis", -1)) % x.ndim
    eps = float(attrs.get("epsilon", 1e-5))
    if node.outputs == 1 and x.dtype == np.float32:  # nn's fused kernel
        return [F.layer_norm(x, tuple(x.shape[axis:]), scale, bias, eps)]
    stashed = _stash(x, attrs)
    mean, var = _stats(stashed, tuple(range(axis, x.ndim)))
    inv_std = 1 / pb.sqrt(var + eps)
    y = ((stashed - mean) * inv_std).to(x.dtype) * scale
    if bias is not None:
        y = y + bias
    return [y, mean, inv_std]


@converter("GroupNormalization")
def _group_norm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Statistics per group of channels; ``scale`` and ``bias`` per channel (opset 21) or,
    in the first version (opset 18), per group."""
    x, scale, bias = ins
    groups = int(attrs["num_groups"])
    n, c = x.shape[:2]
    stashed = _stash(x, attrs)
    grouped = stashed.reshape((n, groups, -1))
    mean, var = _stats(grouped, (2,))
    eps = float(attrs.get("epsilon", 1e-5))
    normed = ((grouped - mean) / pb.sqrt(var + eps)).reshape(tuple(x.shape)).to(x.dtype)
    if scale.shape[0] != c:  # per group
        scale = pb.repeat_interleave(scale, c // groups)
        bias = pb.repeat_interleave(bias, c // groups)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return [normed * scale.reshape(shape) + bias.reshape(shape)]


@converter("RMSNormalization")
def _rms_norm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, scale = ins[0], ins[1]
    axis = int(attrs.get("axis", -1)) % x.ndim
    stashed = _stash(x, attrs)
    mean_square = (stashed * stashed).mean(axis=tuple(range(axis, x.ndim)), keepdims=True)
    y = stashed / pb.sqrt(mean_square + float(attrs.get("epsilon", 1e-5)))
    return [y.to(x.dtype) * scale]


@converter("MeanVarianceNormalization")
def _mean_variance_norm(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                        ) -> list[Any]:
    x = ins[0]
    axes = tuple(a % x.ndim for a in attrs.get("axes", [0, 2, 3]))
    mean, var = _stats(x, axes)
    return [(x - mean) / (pb.sqrt(var) + 1e-9)]


@converter("LpNormalization")
def _lp_norm(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x = ins[0]
    axis, p = int(attrs.get("axis", -1)), int(attrs.get("p", 2))
    norm = pb.abs(x).sum(axis=axis, keepdims=True) if p == 1 else \
        pb.sqrt((x * x).sum(axis=axis, keepdims=True))
    return [pb.where(norm == 0, pb.zeros_like(x), x / norm)]


@converter("LRN")
def _lrn(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Over the channels ``c - floor((size-1)/2)`` to ``c + ceil((size-1)/2)``."""
    x = ins[0]
    size = int(attrs["size"])
    alpha, beta = float(attrs.get("alpha", 1e-4)), float(attrs.get("beta", 0.75))
    bias = float(attrs.get("bias", 1.0))
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    squares = pad(x * x, [0, before] + [0] * (x.ndim - 2), [0, after] + [0] * (x.ndim - 2))
    channels = x.shape[1]
    total = sum(squares.narrow(1, i, channels) for i in range(size))
    return [x / (bias + alpha / size * total) ** beta]


def _coerced(fn: Any) -> Any:
    """Softmax, LogSoftmax and Hardmax: over ``axis`` from opset 13, over the axes from
    ``axis`` on, flattened into one (default 1), before."""
    def convert(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
        x = ins[0]
        if node.opset >= 13:
            return [fn(x, int(attrs.get("axis", -1)) % max(x.ndim, 1))]
        axis = int(attrs.get("axis", 1)) % max(x.ndim, 1)
        flat = x.reshape(tuple(x.shape[:axis]) + (-1,))
        return [fn(flat, axis).reshape(tuple(x.shape))]
    return convert


def _hardmax(x: Tensor, axis: int) -> Tensor:
    first = pb.argmax(x, axis=axis, keepdims=True)
    positions = pb.arange(x.shape[axis], dtype=np.int64).reshape(
        tuple(x.shape[axis] if d == axis else 1 for d in range(x.ndim)))
    return (positions == first).to(x.dtype)


converter("Softmax")(_coerced(lambda x, axis: F.softmax(x, dim=axis)))
converter("LogSoftmax")(_coerced(lambda x, axis: F.log_softmax(x, dim=axis)))
converter("Hardmax")(_coerced(_hardmax))


@converter("Dropout")
def _dropout(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """Inference (or a ratio of 0): the input, and a mask of ones. Training mode with a
    positive ratio draws random numbers, which an imported graph does not."""
    x = ins[0]
    training = optional(ins, 2) is not None and bool(scalar(ins[2]))
    ratio = float(scalar(ins[1])) if optional(ins, 1) is not None else \
        float(attrs.get("ratio", 0.5))
    if training and ratio > 0:
        raise NotImplementedError("Dropout in training mode (random)")
    return [x, pb.ones(tuple(x.shape), dtype=np.bool_)]


@converter("Col2Im")
def _col2im(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    x, image, block = ins[0], ints(ins[1]), ints(ins[2])
    if len(image) != 2:
        raise NotImplementedError(f"Col2Im over {len(image)} spatial axes")
    pads = list(attrs.get("pads", [0, 0, 0, 0]))
    if pads[:2] != pads[2:]:
        raise NotImplementedError("Col2Im with asymmetric pads")
    return [F.fold(x, image, block, dilation=list(attrs.get("dilations", [1, 1])),
                   padding=pads[:2], stride=list(attrs.get("strides", [1, 1])))]
