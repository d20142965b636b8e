"""Convolutions: ``conv2d`` (the fused ``nn.conv2d`` op), ``conv1d`` (conv2d on a height-1
image) and ``conv_transpose2d`` (``nn.conv2d_input_grad``, the adjoint of conv2d)."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.errors import ArgumentError, DeviceError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_ndim, pair
from .._ops.conv import CONV2D, CONV2D_INPUT_GRAD
from .._ops.geometry import (
    check_geometry, check_number_dtype, check_output_size, check_same_dtype, check_windows,
)

Padding2d = tuple[tuple[int, int], tuple[int, int]]


def conv_padding(padding: Any, kernel: tuple[int, int], stride: tuple[int, int],
                 dilation: tuple[int, int], where: str) -> Padding2d:
    """Padding as ((top, bottom), (left, right)): ints, pairs, ``"valid"`` or ``"same"``.

    ``"same"`` keeps the size with stride 1; when the kernel's reach is odd the extra row and
    column go at the bottom and right, as in PyTorch.
    """
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0), (0, 0))
        if padding != "same":
            raise ArgumentError(f"{where}: padding must be an int, a pair, 'valid' or 'same', "
                                f"got {padding!r}")
        if stride != (1, 1):
            raise ArgumentError(f"{where}: padding='same' is not supported for strided "
                                f"convolutions (stride {stride})")
        out = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            out.append((total // 2, total - total // 2))
        return (out[0], out[1])
    ph, pw = pair(padding, where, "padding")
    return ((ph, ph), (pw, pw))


def _check_conv(where: str, x: Tensor, weight: Tensor, bias: Tensor | None, groups: int,
                in_channels: int) -> None:
    expect_ndim(where, x, (4,))
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ArgumentError(f"{where}: groups must be a positive int, got {groups!r}")
    if in_channels % groups or weight.shape[0] % groups:
        raise ShapeError(f"{where}: groups={groups} must divide in_channels ({in_channels}) and "
                         f"out_channels ({weight.shape[0]})")
    if weight.shape[0] == 0:
        raise ShapeError(f"{where}: weight of shape {tuple(weight.shape)} has no output "
                         "channels")
    if x.shape[1] != in_channels:
        raise ShapeError(f"{where}: input of shape {tuple(x.shape)} has {x.shape[1]} channels, "
                         f"weight of shape {tuple(weight.shape)} expects {in_channels}")
    for other, name in ((weight, "weight"), (bias, "bias")):
        if other is not None and x.device is not other.device:
            raise DeviceError(f"{where}: input on {x.device}, {name} on {other.device}")
    check_number_dtype(where, x)
    check_same_dtype(where, ("input", x), ("weight", weight), ("bias", bias))


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d convolution of (N, C, H, W) with a (O, C/groups, kh, kw) weight (PyTorch's
    ``F.conv2d``, including ``padding="same"``). A 3-d input (C, H, W) is one image."""
    where = "conv2d"
    if input.ndim == 3:
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups)[0]
    expect_ndim(where, weight, (4,), "weight")
    _check_conv(where, input, weight, bias, groups, weight.shape[1] * groups)
    stride_, dilation_ = pair(stride, where, "stride"), pair(dilation, where, "dilation")
    pads = conv_padding(padding, tuple(weight.shape[2:]), stride_, dilation_, where)
    check_windows(where, tuple(input.shape), tuple(weight.shape[2:]), stride_, pads, dilation_)
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"{where}: bias of shape {tuple(bias.shape)} does not fit "
                         f"{weight.shape[0]} output channels")
    return apply(CONV2D, input, weight, bias, stride=stride_, padding=pads, dilation=dilation_,
                 groups=groups)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: int = 1,
           padding: Any = 0, dilation: int = 1, groups: int = 1) -> Tensor:
    """1-d convolution of (N, C, L) with a (O, C/groups, k) weight: conv2d on (N, C, 1, L)."""
    if input.ndim == 2:
        return conv1d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups)[0]
    expect_ndim("conv1d", input, (3,))
    expect_ndim("conv1d", weight, (3,), "weight")
    padding = padding if isinstance(padding, str) else (0, _single(padding))
    out = conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias, (1, _single(stride)), padding,
                 (1, _single(dilation)), groups)
    return out.squeeze(2)


def _single(value: Any) -> Any:
    # a one-element sequence or the value itself; the checks of conv2d see what was given
    return value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """Transposed 2-d convolution with a (C_in, C_out/groups, kh, kw) weight (PyTorch's
    ``F.conv_transpose2d``): the gradient of conv2d with respect to its input."""
    where = "conv_transpose2d"
    if input.ndim == 3:
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding,
                                output_padding, groups, dilation)[0]
    expect_ndim(where, weight, (4,), "weight")
    _check_conv(where, input, weight, bias, groups, weight.shape[0])
    stride_, dilation_ = pair(stride, where, "stride"), pair(dilation, where, "dilation")
    pad, extra = pair(padding, where, "padding"), pair(output_padding, where, "output_padding")
    kernel = tuple(weight.shape[2:])
    pads = ((pad[0], pad[0]), (pad[1], pad[1]))
    check_geometry(where, kernel, stride_, pads, dilation_)
    if min(extra) < 0 or any(e >= max(s, d) for e, s, d in zip(extra, stride_, dilation_)):
        raise ArgumentError(f"{where}: output_padding {extra} must be non-negative and smaller "
                            f"than stride {stride_} or dilation {dilation_}")
    n, _, h, w = input.shape
    out_channels = weight.shape[1] * groups
    hw = tuple((size - 1) * s - 2 * p + d * (k - 1) + e + 1
               for size, s, p, d, k, e in zip((h, w), stride_, pad, dilation_, kernel, extra))
    if min(hw) < 1:
        raise ShapeError(f"{where}: output size {hw} is not positive for input "
                         f"{tuple(input.shape)} (stride {stride_}, padding {pad}, dilation "
                         f"{dilation_}, kernel {kernel})")
    input_shape = (n, out_channels, hw[0], hw[1])
    check_output_size(where, input_shape, kernel, stride_, pads, dilation_, (h, w))
    out = apply(CONV2D_INPUT_GRAD, input, weight, input_shape=input_shape, stride=stride_,
                padding=pads, dilation=dilation_, groups=groups)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out
