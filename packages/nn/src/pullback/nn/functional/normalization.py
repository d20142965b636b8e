"""Normalization: ``layer_norm`` (the fused op), ``group_norm`` and ``instance_norm`` (layer
norm over channel groups, over each channel), ``rms_norm``, ``batch_norm``,
``local_response_norm`` and ``normalize`` (compositions of core ops)."""

from __future__ import annotations

from typing import Any, Sequence

import pullback
from pullback._autocast_policy import autocast_function
from pullback.dispatch import apply
from pullback.dtypes import finfo
from pullback.errors import ShapeError
from pullback.tensor import Tensor

from .._ops.norm import LAYER_NORM


def _normalized_shape(shape: Any) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)


def _check_trailing(where: str, x: Tensor, shape: tuple[int, ...]) -> None:
    if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise ShapeError(f"{where}: input of shape {tuple(x.shape)} does not end with the "
                         f"normalized shape {shape}")


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` axes, then ``* weight + bias``."""
    shape = _normalized_shape(normalized_shape)
    _check_trailing("layer_norm", input, shape)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise ShapeError(f"layer_norm: {name} of shape {tuple(t.shape)} does not match the "
                             f"normalized shape {shape}")
    return apply(LAYER_NORM, input, weight, bias, normalized_ndim=len(shape), eps=float(eps))


def rms_norm(input: Tensor, normalized_shape: Sequence[int] | int, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing axes; ``eps=None`` is the
    machine epsilon of the input's dtype (as in PyTorch)."""
    shape = _normalized_shape(normalized_shape)
    _check_trailing("rms_norm", input, shape)
    if eps is None:
        eps = float(finfo(input.dtype).eps)
    axes = tuple(range(input.ndim - len(shape), input.ndim))
    out = input * pullback.rsqrt(pullback.mean(input * input, axis=axes, keepdims=True) + eps)
    return out * weight if weight is not None else out


@autocast_function("group_norm")
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize (N, C, *) over each group of C/num_groups channels and the spatial axes."""
    if input.ndim < 2 or input.shape[1] % num_groups:
        raise ShapeError(f"group_norm: {num_groups} groups do not divide the channels of an "
                         f"input of shape {tuple(input.shape)}")
    n, c = input.shape[:2]
    grouped = input.reshape(n, num_groups, -1)
    out = apply(LAYER_NORM, grouped, None, None, normalized_ndim=1, eps=float(eps))
    out = out.reshape(tuple(input.shape))
    per_channel = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize (N, C, *) per channel: with the batch's statistics when ``training`` (and then
    update the running ones in place: ``running = (1 - momentum) * running + momentum * batch``,
    with the unbiased variance), with the running statistics otherwise."""
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of shape (N, C, ...), got "
                         f"{tuple(input.shape)}")
    c = input.shape[1]
    axes = (0,) + tuple(range(2, input.ndim))
    per_channel = (1, c) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // c
        if count <= 1:
            raise ValueError(f"batch_norm: expected more than one value per channel in "
                             f"training, got input of shape {tuple(input.shape)}")
        mean = pullback.mean(input, axis=axes, keepdims=True)
        centered = input - mean
        var = pullback.mean(centered * centered, axis=axes, keepdims=True)
        if running_mean is not None and running_var is not None:
            with pullback.no_grad():
                unbiased = var.reshape(c) * (count / (count - 1))
                running_mean.copy_(running_mean * (1 - momentum) + mean.reshape(c) * momentum)
                running_var.copy_(running_var * (1 - momentum) + unbiased * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running statistics are needed outside training")
        mean = running_mean.reshape(per_channel)
        var = running_var.reshape(per_channel)
        centered = input - mean
    out = centered * pullback.rsqrt(var + eps)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each sample's channels of (N, C, *) over their spatial positions (the fused
    layer norm on (N, C, positions)), then a per-channel affine map. With ``use_input_stats``
    the running statistics, if given, move towards the batch's mean of the per-instance means
    and unbiased variances; without, the running statistics normalize instead."""
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected an input of shape (N, C, ...) with at least "
                         f"one spatial axis, got {tuple(input.shape)}")
    n, c = input.shape[:2]
    per_channel = (1, c) + (1,) * (input.ndim - 2)
    if use_input_stats:
        flat = input.reshape(n, c, -1)
        positions = flat.shape[-1]
        out = apply(LAYER_NORM, flat, None, None, normalized_ndim=1, eps=float(eps))
        out = out.reshape(tuple(input.shape))
        if running_mean is not None and running_var is not None:
            if positions <= 1:
                raise ValueError(f"instance_norm: expected more than one spatial position per "
                                 f"channel in training, got input of shape {tuple(input.shape)}")
            with pullback.no_grad():
                mean = flat.mean(axis=2)
                unbiased = pullback.var(flat, axis=2, correction=1)
                running_mean.copy_(running_mean * (1 - momentum) + mean.mean(axis=0) * momentum)
                running_var.copy_(running_var * (1 - momentum) + unbiased.mean(axis=0) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: running statistics are needed without input "
                             "statistics")
        out = (input - running_mean.reshape(per_channel)) * pullback.rsqrt(
            running_var.reshape(per_channel) + eps)
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Normalize each channel of (N, C, *) by the mean square of its ``size`` neighbouring
    channels: ``x / (k + alpha * mean(x^2))^beta`` (AlexNet's, PyTorch's formula)."""
    from .padding import pad
    from .pooling import avg_pool2d, avg_pool3d

    if input.ndim < 3:
        raise ShapeError(f"local_response_norm: expected an input of shape (N, C, ...) with at "
                         f"least 3 dims, got {tuple(input.shape)}")
    if input.numel() == 0:
        return input
    squares = input * input
    window = (size // 2, (size - 1) // 2)
    if input.ndim == 3:
        padded = pad(squares.unsqueeze(1), (0, 0) + window)
        mean = avg_pool2d(padded, (size, 1), stride=1).squeeze(1)
    else:
        n, c = input.shape[:2]
        flat = squares.reshape(n, 1, c, input.shape[2], -1)
        mean = avg_pool3d(pad(flat, (0, 0, 0, 0) + window), (size, 1, 1), stride=1)
        mean = mean.squeeze(1).reshape(tuple(input.shape))
    return input / (mean * alpha + k) ** beta


@autocast_function("normalize")
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Any = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``."""
    if out is not None:
        raise TypeError("normalize: out= is not supported (assign the result instead)")
    norm = pullback.norm(input, p, axis=dim, keepdims=True)
    return input / pullback.clamp(norm, min=eps)
