"""Convolutions in 1, 2 and 3 spatial dimensions: ``conv1d``/``conv2d``/``conv3d`` (the fused
``nn.conv2d``/``nn.conv3d`` ops; 1-d runs as 2-d of height 1) and their transposes
``conv_transpose1d``/``2d``/``3d`` (the ops' input adjoints, ``nn.conv2d_input_grad``...)."""

from __future__ import annotations

from typing import Any

from pullback._autocast_policy import autocast_function
from pullback._memo import remembered
from pullback.dispatch import apply
from pullback.errors import ArgumentError, DeviceError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_ndim, ntuple
from .._ops.conv import CONV2D, CONV2D_INPUT_GRAD, CONV3D, CONV3D_INPUT_GRAD
from .._ops.geometry import (
    PaddingNd, check_geometry, check_number_dtype, check_output_size, check_same_dtype,
    check_windows,
)

# The op of each spatial rank; 1-d convolutions run as 2-d ones on a height-1 image.
_CONV = {2: CONV2D, 3: CONV3D}
_CONV_TRANSPOSE = {2: CONV2D_INPUT_GRAD, 3: CONV3D_INPUT_GRAD}


def conv_padding(padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                 dilation: tuple[int, ...], where: str) -> PaddingNd:
    """Padding as one (before, after) pair per spatial axis: ints, tuples, ``"valid"`` or
    ``"same"``.

    ``"same"`` keeps the size with stride 1; when the kernel's reach is odd the extra row and
    column go at the bottom and right, as in PyTorch.
    """
    rank = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * rank
        if padding != "same":
            raise ArgumentError(f"{where}: padding must be an int, a tuple, 'valid' or 'same', "
                                f"got {padding!r}")
        if any(s != 1 for s in stride):
            raise ArgumentError(f"{where}: padding='same' is not supported for strided "
                                f"convolutions (stride {stride})")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in ntuple(padding, rank, where, "padding"))


def _check_conv(where: str, rank: int, x: Tensor, weight: Tensor, bias: Tensor | None,
                groups: int, in_channels: int) -> None:
    expect_ndim(where, x, (rank + 2,))
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
    _check_devices(where, x, weight, bias)
    check_number_dtype(where, x)
    check_same_dtype(where, ("input", x), ("weight", weight), ("bias", bias))


def _check_devices(where: str, x: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    for other, name in ((weight, "weight"), (bias, "bias")):
        if other is not None and x.device is not other.device:
            raise DeviceError(f"{where}: input on {x.device}, {name} on {other.device}")


# A convolution's arguments checked, by everything the checks read (rank, shapes, dtypes, the
# window arguments and their types): the keyword arguments of its op, shared by the calls that
# unpack them (a plain dict: a read-only mapping took 0.3 us more to unpack). A batch-1 layer
# spent more in these checks than in its C kernel.
_CHECKED: dict[tuple[Any, ...], dict[str, Any]] = {}


def _checked_attrs(where: str, rank: int, input: Tensor, weight: Tensor, bias: Tensor | None,
                   stride: Any, padding: Any, dilation: Any, groups: int) -> dict[str, Any]:
    """The op's ``stride``, ``padding`` (pairs), ``dilation`` and ``groups`` for a batched
    ``input``, every argument checked (the windows fit the padded input)."""
    expect_ndim(where, weight, (rank + 2,), "weight")
    _check_conv(where, rank, input, weight, bias, groups, weight.shape[1] * groups)
    stride_ = ntuple(stride, rank, where, "stride")
    dilation_ = ntuple(dilation, rank, where, "dilation")
    pads = conv_padding(padding, tuple(weight.shape[2:]), stride_, dilation_, where)
    check_windows(where, tuple(input.shape), tuple(weight.shape[2:]), stride_, pads, dilation_)
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ShapeError(f"{where}: bias of shape {tuple(bias.shape)} does not fit "
                         f"{weight.shape[0]} output channels")
    return dict(stride=_lifted(stride_, rank, 1), padding=_lifted(pads, rank, (0, 0)),
                dilation=_lifted(dilation_, rank, 1), groups=groups)


def _lift(x: Tensor, rank: int) -> Tensor:
    """A 1-d tensor (N, C, L) as a 2-d one (N, C, 1, L); others as they are."""
    return x.unsqueeze(2) if rank == 1 else x


def _lifted(values: tuple, rank: int, one: Any) -> tuple:
    return (one,) + values if rank == 1 else values


def _convolve(where: str, rank: int, input: Tensor, weight: Tensor, bias: Tensor | None,
              stride: Any, padding: Any, dilation: Any, groups: int) -> Tensor:
    # The tensors' own shape and dtype (not their arrays'): under vmap they are the logical ones
    shape = input.shape
    if len(shape) == rank + 1:  # one unbatched sample
        return _convolve(where, rank, input.unsqueeze(0), weight, bias, stride, padding,
                         dilation, groups)[0]
    _check_devices(where, input, weight, bias)
    # (stride=True equals 1 as a key, but is refused: the classes are part of the key)
    key = (where, rank, shape, input.dtype, weight.shape, weight.dtype,
           None if bias is None else bias.shape, None if bias is None else bias.dtype, stride,
           padding, dilation, groups, stride.__class__, dilation.__class__, groups.__class__)
    attrs = remembered(_CHECKED, key, 512, lambda: _checked_attrs(
        where, rank, input, weight, bias, stride, padding, dilation, groups))
    out = apply(_CONV[max(rank, 2)], _lift(input, rank), _lift(weight, rank), bias, **attrs)
    return out.squeeze(2) if rank == 1 else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-d convolution of (N, C, L) with a (O, C/groups, k) weight (PyTorch's ``F.conv1d``,
    including ``padding="same"``). A 2-d input (C, L) is one sample."""
    return _convolve("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d convolution of (N, C, H, W) with a (O, C/groups, kh, kw) weight (PyTorch's
    ``F.conv2d``, including ``padding="same"``). A 3-d input (C, H, W) is one image."""
    return _convolve("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-d convolution of (N, C, D, H, W) with a (O, C/groups, kd, kh, kw) weight (PyTorch's
    ``F.conv3d``, including ``padding="same"``): im2col and one GEMM. A 4-d input is one
    volume."""
    return _convolve("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def transposed_output_size(where: str, input_size: tuple[int, ...], kernel: tuple[int, ...],
                           stride: tuple[int, ...], padding: tuple[int, ...],
                           dilation: tuple[int, ...], output_padding: tuple[int, ...]
                           ) -> tuple[int, ...]:
    """The spatial size of a transposed convolution's output (PyTorch's formula)."""
    if min(output_padding) < 0 or any(e >= max(s, d) for e, s, d
                                      in zip(output_padding, stride, dilation)):
        raise ArgumentError(f"{where}: output_padding {output_padding} must be non-negative and "
                            f"smaller than stride {stride} or dilation {dilation}")
    return tuple((size - 1) * s - 2 * p + d * (k - 1) + e + 1 for size, s, p, d, k, e
                 in zip(input_size, stride, padding, dilation, kernel, output_padding))


def _convolve_transposed(where: str, rank: int, input: Tensor, weight: Tensor,
                         bias: Tensor | None, stride: Any, padding: Any, output_padding: Any,
                         groups: int, dilation: Any) -> Tensor:
    if input.ndim == rank + 1:  # one unbatched sample
        return _convolve_transposed(where, rank, input.unsqueeze(0), weight, bias, stride,
                                    padding, output_padding, groups, dilation)[0]
    expect_ndim(where, weight, (rank + 2,), "weight")
    _check_conv(where, rank, input, weight, bias, groups, weight.shape[0])
    stride_ = ntuple(stride, rank, where, "stride")
    dilation_ = ntuple(dilation, rank, where, "dilation")
    pad = ntuple(padding, rank, where, "padding")
    extra = ntuple(output_padding, rank, where, "output_padding")
    kernel = tuple(weight.shape[2:])
    pads = tuple((p, p) for p in pad)
    check_geometry(where, kernel, stride_, pads, dilation_)
    spatial = transposed_output_size(where, tuple(input.shape[2:]), kernel, stride_, pad,
                                     dilation_, extra)
    if min(spatial) < 1:
        raise ShapeError(f"{where}: output size {spatial} is not positive for input "
                         f"{tuple(input.shape)} (stride {stride_}, padding {pad}, dilation "
                         f"{dilation_}, kernel {kernel})")
    if bias is not None and tuple(bias.shape) != (weight.shape[1] * groups,):
        raise ShapeError(f"{where}: bias of shape {tuple(bias.shape)} does not fit "
                         f"{weight.shape[1] * groups} output channels")
    input_shape = (input.shape[0], weight.shape[1] * groups) + spatial
    check_output_size(where, input_shape, kernel, stride_, pads, dilation_,
                      tuple(input.shape[2:]))
    out = apply(_CONV_TRANSPOSE[max(rank, 2)], _lift(input, rank), _lift(weight, rank),
                input_shape=tuple(input_shape[:2]) + _lifted(spatial, rank, 1),
                stride=_lifted(stride_, rank, 1), padding=_lifted(pads, rank, (0, 0)),
                dilation=_lifted(dilation_, rank, 1), groups=groups)
    if rank == 1:
        out = out.squeeze(2)
    if bias is not None:
        out = out + bias.reshape((1, -1) + (1,) * rank)
    return out


@autocast_function("conv_transpose1d")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 1-d convolution with a (C_in, C_out/groups, k) weight (PyTorch's
    ``F.conv_transpose1d``): the gradient of conv1d with respect to its input."""
    return _convolve_transposed("conv_transpose1d", 1, input, weight, bias, stride, padding,
                                output_padding, groups, dilation)


@autocast_function("conv_transpose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """Transposed 2-d convolution with a (C_in, C_out/groups, kh, kw) weight (PyTorch's
    ``F.conv_transpose2d``): the gradient of conv2d with respect to its input."""
    return _convolve_transposed("conv_transpose2d", 2, input, weight, bias, stride, padding,
                                output_padding, groups, dilation)


@autocast_function("conv_transpose3d")
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0,
                     groups: int = 1, dilation: Any = 1) -> Tensor:
    """Transposed 3-d convolution with a (C_in, C_out/groups, kd, kh, kw) weight (PyTorch's
    ``F.conv_transpose3d``): the gradient of conv3d with respect to its input."""
    return _convolve_transposed("conv_transpose3d", 3, input, weight, bias, stride, padding,
                                output_padding, groups, dilation)
