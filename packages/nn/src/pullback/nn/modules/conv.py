"""Convolution layers: ``Conv1d``, ``Conv2d``, ``ConvTranspose2d`` (PyTorch's arguments,
weight layouts and initialization)."""

from __future__ import annotations

import math
from typing import Any

import pullback
from pullback.tensor import Tensor

from .. import functional as F
from .. import init
from .._checks import pair
from ..module import Module
from ..parameter import Parameter


class _ConvNd(Module):
    """Shared parameters and initialization; ``weight_shape`` is the layer's weight layout."""

    def __init__(self, name: str, in_channels: int, out_channels: int, kernel_size: tuple,
                 stride: tuple, padding: Any, dilation: tuple, groups: int, bias: bool,
                 weight_shape: tuple, device: Any, dtype: Any) -> None:
        super().__init__()
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must divide in_channels ({in_channels}) "
                             f"and out_channels ({out_channels})")
        if isinstance(padding, str) and padding not in ("same", "valid"):
            raise ValueError(f"{name}: padding must be 'same', 'valid' or numbers, got {padding!r}")
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError(f"{name}: padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.groups = dilation, groups
        kw = {"device": device, "dtype": dtype}
        self.weight = Parameter(pullback.empty(*weight_shape, **kw))
        if bias:
            self.bias = Parameter(pullback.empty(out_channels, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: kaiming_uniform(a=sqrt(5)) for the weight, U(+-1/sqrt(fan_in))
        for the bias."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding not in (0, (0,), (0, 0)):
            s += f", padding={self.padding}"
        if self.dilation not in ((1,), (1, 1)):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv2d(_ConvNd):
    """2-d convolution over (N, C, H, W); weight (out, in/groups, kh, kw).

    ``padding`` may be an int, a pair, ``"valid"`` or ``"same"`` (stride 1).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"Conv2d: only padding_mode='zeros' is supported, got {padding_mode!r}")
        k = pair(kernel_size, "Conv2d", "kernel_size")
        pad = padding if isinstance(padding, str) else pair(padding, "Conv2d", "padding")
        super().__init__("Conv2d", in_channels, out_channels, k, pair(stride, "Conv2d", "stride"),
                         pad, pair(dilation, "Conv2d", "dilation"), groups, bias,
                         (out_channels, in_channels // max(groups, 1)) + k, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv1d(_ConvNd):
    """1-d convolution over (N, C, L); weight (out, in/groups, k)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f"Conv1d: only padding_mode='zeros' is supported, got {padding_mode!r}")
        k = (_single(kernel_size),)
        pad = padding if isinstance(padding, str) else (_single(padding),)
        super().__init__("Conv1d", in_channels, out_channels, k, (_single(stride),), pad,
                         (_single(dilation),), groups, bias,
                         (out_channels, in_channels // max(groups, 1)) + k, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return F.conv1d(input, self.weight, self.bias, self.stride[0], padding,
                        self.dilation[0], self.groups)


def _single(value: Any) -> int:
    return int(value[0]) if isinstance(value, (tuple, list)) else int(value)


class ConvTranspose2d(_ConvNd):
    """Transposed 2-d convolution (the gradient of Conv2d in its input); weight
    (in, out/groups, kh, kw); ``output_padding`` picks among the sizes a stride allows."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError("ConvTranspose2d: only padding_mode='zeros' is supported")
        k = pair(kernel_size, "ConvTranspose2d", "kernel_size")
        extra = pair(output_padding, "ConvTranspose2d", "output_padding")
        super().__init__("ConvTranspose2d", in_channels, out_channels, k,
                         pair(stride, "ConvTranspose2d", "stride"),
                         pair(padding, "ConvTranspose2d", "padding"),
                         pair(dilation, "ConvTranspose2d", "dilation"), groups, bias,
                         (in_channels, out_channels // max(groups, 1)) + k, device, dtype)
        self.output_padding = extra

    def forward(self, input: Tensor) -> Tensor:
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)
