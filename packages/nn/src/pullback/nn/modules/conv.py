"""Convolution layers: ``Conv1d``/``2d``/``3d`` and ``ConvTranspose1d``/``2d``/``3d``
(PyTorch's arguments, attributes, weight layouts, initialization and ``padding_mode``)."""

from __future__ import annotations

import math
from typing import Any, Sequence

import pullback
from pullback.tensor import Tensor

from .. import functional as F
from .. import init
from .._checks import ntuple
from ..functional.conv import transposed_output_size
from ..module import Module
from ..parameter import Parameter

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared parameters, checks and initialization of the convolutions of one rank."""

    _rank = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 output_padding: Any = 0) -> None:
        super().__init__()
        name, rank = type(self).__name__, self._rank
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: groups={groups} must divide in_channels ({in_channels}) "
                             f"and out_channels ({out_channels})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, got "
                             f"{padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f"{name}: only padding_mode='zeros' is supported, got "
                             f"{padding_mode!r}")
        kernel = ntuple(kernel_size, rank, name, "kernel_size")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = kernel
        self.stride = ntuple(stride, rank, name, "stride")
        self.dilation = ntuple(dilation, rank, name, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"{name}: padding must be 'same', 'valid' or numbers, got "
                                 f"{padding!r}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 "convolutions")
            self.padding: Any = padding
        else:
            self.padding = ntuple(padding, rank, name, "padding")
        self.output_padding = ntuple(output_padding, rank, name, "output_padding")
        self.groups, self.padding_mode, self.transposed = groups, padding_mode, self._transposed
        self._reversed_padding_repeated_twice = _reversed_padding(self.padding, kernel,
                                                                  self.dilation)
        if self._transposed:
            shape = (in_channels, out_channels // groups) + kernel
        else:
            shape = (out_channels, in_channels // groups) + kernel
        kw = {"device": device, "dtype": dtype}
        self.weight = Parameter(pullback.empty(*shape, **kw))
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
        if self.padding != (0,) * self._rank:
            s += f", padding={self.padding!r}"
        if self.dilation != (1,) * self._rank:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._rank:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode!r}"
        return s


def _reversed_padding(padding: Any, kernel: tuple[int, ...],
                      dilation: tuple[int, ...]) -> list[int]:
    """The padding as ``F.pad`` widths (last axis first, before and after): what a layer with
    a ``padding_mode`` other than zeros pads its input with."""
    if padding == "valid":
        padding = (0,) * len(kernel)
    if padding == "same":
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        pairs = [(t // 2, t - t // 2) for t in totals]
    else:
        pairs = [(p, p) for p in padding]
    return [w for pair in reversed(pairs) for w in pair]


class _Conv(_ConvNd):
    _function: Any = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        function = type(self)._function
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return function(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                            self.groups)
        return function(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                        self.groups)


class Conv1d(_Conv):
    """1-d convolution over (N, C, L); weight (out, in/groups, k).

    ``padding`` may be an int, ``"valid"`` or ``"same"`` (stride 1); ``padding_mode`` is
    ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
    """

    _rank = 1
    _function = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution over (N, C, H, W); weight (out, in/groups, kh, kw).

    ``padding`` may be an int, a pair, ``"valid"`` or ``"same"`` (stride 1); ``padding_mode``
    is ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
    """

    _rank = 2
    _function = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-d convolution over (N, C, D, H, W); weight (out, in/groups, kd, kh, kw).

    ``padding`` may be an int, a triple, ``"valid"`` or ``"same"`` (stride 1); ``padding_mode``
    is ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``.
    """

    _rank = 3
    _function = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """Transposed convolutions: PyTorch's argument order (``output_padding`` before ``groups``,
    ``dilation`` after ``bias``) and ``forward(input, output_size=None)``."""

    _transposed = True
    _function: Any = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be numbers, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input: Tensor, output_size: Sequence[int] | None) -> Any:
        """The ``output_padding`` that gives ``output_size`` (the spatial sizes, optionally
        after batch and channels), checked against the sizes the stride allows."""
        if output_size is None:
            return self.output_padding
        rank = self._rank
        sizes = [int(s) for s in output_size][-rank:] if len(output_size) > rank else \
            [int(s) for s in output_size]
        if len(sizes) != rank:
            raise ValueError(f"{type(self).__name__}: output_size must have {rank} or "
                             f"{rank + 2} elements, got {list(output_size)}")
        lowest = transposed_output_size(
            type(self).__name__, tuple(input.shape[-rank:]), self.kernel_size, self.stride,
            self.padding, self.dilation, (0,) * rank)
        extra = []
        for size, low, step in zip(sizes, lowest, self.stride):
            if not low <= size <= low + step - 1:
                raise ValueError(f"{type(self).__name__}: requested an output size of {sizes}, "
                                 f"but valid sizes range from {list(lowest)} to "
                                 f"{[lo + s - 1 for lo, s in zip(lowest, self.stride)]} (for an "
                                 f"input of {list(input.shape[-rank:])})")
            extra.append(size - low)
        return tuple(extra)

    def forward(self, input: Tensor, output_size: Sequence[int] | None = None) -> Tensor:
        return type(self)._function(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups,
                                    self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-d convolution (the gradient of Conv1d in its input); weight
    (in, out/groups, k); ``output_padding`` picks among the sizes a stride allows."""

    _rank = 1
    _function = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-d convolution (the gradient of Conv2d in its input); weight
    (in, out/groups, kh, kw); ``output_padding`` picks among the sizes a stride allows."""

    _rank = 2
    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-d convolution (the gradient of Conv3d in its input); weight
    (in, out/groups, kd, kh, kw); ``output_padding`` picks among the sizes a stride allows."""

    _rank = 3
    _function = staticmethod(F.conv_transpose3d)
