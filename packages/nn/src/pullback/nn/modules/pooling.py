"""Pooling layers: ``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d``."""

from __future__ import annotations

from typing import Any

from pullback.tensor import Tensor

from .. import functional as F
from ..module import Module


class MaxPool2d(Module):
    """Max over windows of (N, C, H, W); ``stride`` defaults to ``kernel_size``; padding is
    -inf."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 dilation: Any = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation

    def forward(self, input: Tensor) -> Tensor:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}")


class AvgPool2d(Module):
    """Mean over windows of (N, C, H, W); padded zeros count unless ``count_include_pad`` is
    false."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.count_include_pad = padding, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"count_include_pad={self.count_include_pad}")


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed output size (PyTorch's window boundaries)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"
