"""Argument validation of the sliding-window family: convolution, transposed convolution,
pooling, and the im2col/col2im that they share, over 1, 2 or 3 spatial axes.

Every path checks its window geometry here before any C kernel or ``as_strided`` view runs:
the public functions (``F.conv2d``, ``F.max_pool2d``...), the ops' kernels (reached directly
with :func:`pullback.dispatch.apply`, by grad rules and by other packages) and the lowest entry
points themselves (:func:`pullback.nn._ops.conv.windows`, the native ``im2col``/``col2im``). What
passes is what the C sources state at their top that their callers guarantee: an
(N, C, *spatial) input with one spatial axis per kernel size (4-d for the 2-d ops), positive
kernel sizes, strides and dilations, non-negative padding, and at least one window per
axis that lies inside the padded input. Without the checks a zero stride divides by zero in C
(SIGFPE) and a negative dilation makes ``as_strided`` read before the buffer (SIGSEGV).

A geometry is ``kernel``, ``stride`` and ``dilation`` as one int per spatial axis (``(h, w)``
pairs in 2-d) and ``padding`` as one ``(before, after)`` pair per axis
(``((top, bottom), (left, right))`` in 2-d). The checks are cached by geometry: a training loop pays a
dictionary look-up per call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback._memo import remembered
from pullback.errors import ArgumentError, DTypeError, ShapeError, UnsupportedDTypeError

Pair = tuple[int, int]
Padding = tuple[Pair, Pair]
Sizes = tuple[int, ...]  # one int per spatial axis
PaddingNd = tuple[Pair, ...]  # one (before, after) pair per spatial axis

# The spatial ranks the window ops have kernels for.
_RANKS = (1, 2, 3)

# Sizes go to the C kernels as int64; larger values cannot be meant and would wrap.
_INT64_MAX = 2 ** 63 - 1
# A padded size below this keeps every index im2col.c computes (row * stride - pad + ...) in
# int64 (no array that large can exist anyway).
_INDEX_MAX = 2 ** 62


def out_size(size: int, k: int, stride: int, pad: tuple[int, int], dilation: int) -> int:
    """Output length of a convolution or pooling along one axis (may be < 1: not checked)."""
    return (size + pad[0] + pad[1] - dilation * (k - 1) - 1) // stride + 1


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _ints(where: str, name: str, value: Any, rank: int) -> Sizes:
    """``value`` as ``rank`` plain ints; an ArgumentError names anything else."""
    if not (isinstance(value, tuple) and len(value) == rank and all(map(_is_int, value))):
        what = "a pair of ints" if rank == 2 else f"a tuple of {rank} ints"
        raise ArgumentError(f"{where}: {name} must be {what}, got {value!r}")
    if not all(-_INT64_MAX <= v <= _INT64_MAX for v in value):
        raise ArgumentError(f"{where}: {name} {value} does not fit in 64 bits")
    return tuple(int(v) for v in value)


def _rank(kernel: Any) -> int:
    """The number of spatial axes a geometry is for: the length of its kernel size (2 for a
    kernel size that is no tuple of 1 to 3 values, whose check then names it as for 2-d)."""
    return len(kernel) if isinstance(kernel, tuple) and len(kernel) in _RANKS else 2


def check_windows(where: str, shape: tuple[int, ...], kernel: Sizes, stride: Sizes,
                  padding: PaddingNd, dilation: Sizes) -> Sizes:
    """Check a window geometry over an input of ``shape`` (N, C, *spatial); return the number
    of windows along each spatial axis ((Ho, Wo) in 2-d).

    Raises:
        ShapeError: ``shape`` does not have two axes more than the kernel (4-d in 2-d), or the
            padded input is smaller than one window.
        ArgumentError: a kernel size, stride or dilation that is not positive, negative padding,
            or a value that is not an int.
    """
    return remembered(_CHECKED, (where, shape, kernel, stride, padding, dilation), _CACHE_SIZE,
                      lambda: _check(where, tuple(shape), kernel, stride, padding, dilation))


def check_geometry(where: str, kernel: Any, stride: Any, padding: Any,
                   dilation: Any) -> tuple[Sizes, Sizes, PaddingNd, Sizes]:
    """Check the values of a geometry alone (no input yet: a transposed convolution computes its
    output size from them); return them as plain ints.

    Raises:
        ArgumentError: a kernel size, stride or dilation that is not positive, negative padding,
            or a value that is not an int (or does not fit in 64 bits).
    """
    rank = _rank(kernel)
    kernel = _ints(where, "kernel_size", kernel, rank)
    stride = _ints(where, "stride", stride, rank)
    dilation = _ints(where, "dilation", dilation, rank)
    if not (isinstance(padding, tuple) and len(padding) == rank):
        form = "((top, bottom), (left, right))" if rank == 2 else f"{rank} (before, after) pairs"
        raise ArgumentError(f"{where}: padding must be {form}, got {padding!r}")
    pads = tuple(_ints(where, "padding", p, 2) for p in padding)
    if min(kernel) < 1:
        raise ArgumentError(f"{where}: kernel_size must be positive, got {kernel}")
    if min(stride) < 1:
        raise ArgumentError(f"{where}: stride must be positive, got {stride}")
    if min(dilation) < 1:
        raise ArgumentError(f"{where}: dilation must be positive, got {dilation}")
    if min(v for p in pads for v in p) < 0:
        raise ArgumentError(f"{where}: padding must be non-negative, got {pads}")
    return kernel, stride, pads, dilation


def _check(where: str, shape: tuple[int, ...], kernel: Any, stride: Any, padding: Any,
           dilation: Any) -> Sizes:
    rank = _rank(kernel)
    if len(shape) != 2 + rank:
        layout = "(N, C, H, W)" if rank == 2 else f"(N, C, {rank} spatial axes)"
        raise ShapeError(f"{where}: expected a {2 + rank}-d {layout} input, got shape {shape}")
    kernel, stride, pads, dilation = check_geometry(where, kernel, stride, padding, dilation)
    padded = tuple(shape[2 + a] + sum(pads[a]) for a in range(rank))
    if max(padded) > _INDEX_MAX:
        raise ArgumentError(f"{where}: padding {pads} makes the input {padded} too large to "
                            "index")
    out = tuple(out_size(shape[2 + a], kernel[a], stride[a], pads[a], dilation[a])
                for a in range(rank))
    if min(out) < 1:
        reach = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
        raise ShapeError(
            f"{where}: input of shape {shape} is smaller than the kernel {kernel} (dilation "
            f"{dilation}: reach {reach}; padded input {padded}); output size {out} must be at "
            "least 1")
    return out


# Geometries that passed, with their output sizes: a training loop meets a handful, and a
# dictionary look-up is the cheapest check (errors are not cached: they are raised again).
_CHECKED: dict[tuple[Any, ...], Pair] = {}
_CACHE_SIZE = 4096


def check_output_size(where: str, shape: tuple[int, ...], kernel: Sizes, stride: Sizes,
                      padding: PaddingNd, dilation: Sizes, out_hw: tuple[int, ...]) -> None:
    """Check the geometry (:func:`check_windows`) and that it gives ``out_hw`` windows: the
    spatial size of a gradient (or of im2col's matrix) handed to a backward kernel."""
    expected = check_windows(where, shape, kernel, stride, padding, dilation)
    if tuple(out_hw) != expected:
        raise ShapeError(f"{where}: the windows of an input of shape {shape} (kernel {kernel}, "
                         f"stride {stride}, padding {padding}, dilation {dilation}) are "
                         f"{expected}, got {tuple(out_hw)}")


def check_same_dtype(where: str, *named: tuple[str, Any]) -> None:
    """Raise a DTypeError unless every ``(name, array)`` given (``None`` skipped) has one
    dtype (PyTorch: "Input type (float) and weight type (double) should be the same")."""
    present = [(name, a) for name, a in named if a is not None]
    first_name, first = present[0]
    for name, a in present[1:]:
        if a.dtype != first.dtype:
            raise DTypeError(f"{where}: {first_name} has dtype {first.dtype} but {name} has "
                             f"dtype {a.dtype}; cast one of them (e.g. {name}.to({first_name}"
                             ".dtype))")


def check_number_dtype(where: str, x: Any, floating_only: bool = False) -> None:
    """Raise an UnsupportedDTypeError (a DTypeError) for dtypes the window ops have no kernel
    for: bool always, integers where ``floating_only`` (average pooling, as in PyTorch)."""
    kind = x.dtype.kind
    if kind == "b" or (floating_only and kind in "iu") or kind not in "iufV":
        wanted = "floating point" if floating_only else "numeric (not bool)"
        raise UnsupportedDTypeError(f"{where}: input must be {wanted}, got dtype {x.dtype}")
