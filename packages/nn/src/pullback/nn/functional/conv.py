"""Convolutions: ``conv2d`` (the fused ``nn.conv2d`` op), ``conv1d`` (conv2d on a height-1
image) and ``conv_transpose2d`` (``nn.conv2d_input_grad``, the adjoint of conv2d)."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.errors import ShapeError
from pullback.tensor import Tensor

from .._checks import expect_ndim, pair
from .._ops.conv import CONV2D, CONV2D_INPUT_GRAD, out_size

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
            raise ValueError(f"{where}: padding must be an int, a pair, 'valid' or 'same', "
                             f"got {padding!r}")
        if stride != (1, 1):
            raise ValueError(f"{where}: padding='same' is not supported for strided "
                             f"convolutions (stride {stride})")
        out = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            out.append((total // 2, total - total // 2))
        return (out[0], out[1])
    ph, pw = pair(padding, where, "padding")
    if ph < 0 or pw < 0:
        raise ValueError(f"{where}: padding must be non-negative, got {padding}")
    return ((ph, ph), (pw, pw))


def _check_conv(where: str, x: Tensor, weight: Tensor, bias: Tensor | None, groups: int,
                in_channels: int) -> None:
    expect_ndim(where, x, (4,))
    if groups < 1 or in_channels % groups or weight.shape[0] % groups:
        raise ValueError(f"{where}: groups={groups} must divide in_channels ({in_channels}) and "
                         f"out_channels ({weight.shape[0]})")
    if x.shape[1] != in_channels:
        raise ShapeError(f"{where}: input of shape {tuple(x.shape)} has {x.shape[1]} channels, "
                         f"weight of shape {tuple(weight.shape)} expects {in_channels}")
    if x.device is not weight.device:
        from pullback.errors import DeviceError

        raise DeviceError(f"{where}: input on {x.device}, weight on {weight.device}")


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
    for axis, (k, s, p, d) in enumerate(zip(weight.shape[2:], stride_, pads, dilation_)):
        if out_size(input.shape[2 + axis], k, s, p, d) < 1:
            raise ShapeError(
                f"{where}: input of shape {tuple(input.shape)} is smaller than the kernel "
                f"{tuple(weight.shape[2:])} (dilation {dilation_}, padding {pads})"
            )
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


def _single(value: Any) -> int:
    return int(value[0]) if isinstance(value, (tuple, list)) else int(value)


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
    if any(e >= max(s, d) for e, s, d in zip(extra, stride_, dilation_)):
        raise ValueError(f"{where}: output_padding {extra} must be smaller than stride "
                         f"{stride_} or dilation {dilation_}")
    n, _, h, w = input.shape
    out_channels = weight.shape[1] * groups
    hw = [(size - 1) * s - 2 * p + d * (k - 1) + e + 1
          for size, s, p, d, k, e in zip((h, w), stride_, pad, dilation_, weight.shape[2:], extra)]
    if min(hw) < 1:
        raise ShapeError(f"{where}: output size {tuple(hw)} is not positive for input "
                         f"{tuple(input.shape)}")
    out = apply(CONV2D_INPUT_GRAD, input, weight, input_shape=(n, out_channels, hw[0], hw[1]),
                stride=stride_, padding=((pad[0], pad[0]), (pad[1], pad[1])),
                dilation=dilation_, groups=groups)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out
