"""Adaptive pooling to a fixed output size over 1, 2 or 3 spatial axes.

Output ``i`` of an axis of length ``L`` pools the inputs ``floor(i L / O)`` to
``ceil((i + 1) L / O)`` (PyTorch's windows). Those windows are separable: average pooling is one
averaging matrix per axis (a matmul each), and max pooling gathers every window's entries by
index, takes the first maximum of each (PyTorch's tie rule) and reads the input there, so that
the gradient goes to that position.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback
from pullback.errors import ArgumentError
from pullback.tensor import Tensor

from .._checks import expect_ndim
from .._ops.geometry import check_number_dtype


def _windows(size: int, out: int) -> list[tuple[int, int]]:
    return [((i * size) // out, -((-(i + 1) * size) // out)) for i in range(out)]


def _output_size(where: str, rank: int, x: Tensor, output_size: Any) -> tuple[int, ...]:
    """``output_size`` (an int, or one value per axis where ``None`` keeps the input's size)."""
    sizes = (output_size,) * rank if output_size is None or isinstance(output_size, int) \
        else tuple(output_size)
    if len(sizes) != rank:
        raise ArgumentError(f"{where}: output_size must be an int or {rank} values, got "
                            f"{output_size!r}")
    sizes = tuple(x.shape[-rank + a] if s is None else int(s) for a, s in enumerate(sizes))
    if min(sizes) < 1:
        raise ArgumentError(f"{where}: output size must be positive, got {output_size}")
    return sizes


def _prepare(where: str, rank: int, x: Tensor, output_size: Any) -> tuple[int, ...]:
    expect_ndim(where, x, (rank + 1, rank + 2))
    check_number_dtype(where, x)
    if min(x.shape[-rank:], default=1) < 1:
        raise ArgumentError(f"{where}: input of shape {tuple(x.shape)} has an empty spatial "
                            "axis")
    return _output_size(where, rank, x, output_size)


def _averaging_matrix(size: int, out: int, x: Tensor) -> Tensor:
    """(out, size) matrix whose row i averages PyTorch's adaptive window i."""
    m = np.zeros((out, size), dtype=x.dtype)
    for i, (start, end) in enumerate(_windows(size, out)):
        m[i, start:end] = 1.0 / (end - start)
    return pullback.tensor(m, dtype=x.dtype, device=x.device)


def _adaptive_avg(where: str, rank: int, input: Tensor, output_size: Any) -> Tensor:
    sizes = _prepare(where, rank, input, output_size)
    if input.dtype.kind not in "fV":
        from pullback.errors import UnsupportedDTypeError

        raise UnsupportedDTypeError(f"{where}: input must be floating point, got dtype "
                                    f"{input.dtype}")
    out = input
    for a, o in enumerate(sizes):
        axis = input.ndim - rank + a
        m = _averaging_matrix(input.shape[axis], o, input)
        out = (out.swapaxes(axis, -1) @ m.mT).swapaxes(axis, -1)
    return out


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, L) to a fixed length."""
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, H, W) to a fixed (H_out, W_out) (``None`` keeps that axis)."""
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling of (N, C, D, H, W) to a fixed size (``None`` keeps that axis)."""
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _window_indices(spatial: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """(prod(sizes), K) flat input indices of every output's window, in raster order; short
    windows repeat their last entry (after its first occurrence, so ties keep PyTorch's first
    maximum)."""
    rank = len(spatial)
    row_sizes = [math.prod(spatial[a + 1:]) for a in range(rank)]
    flat = np.zeros((1,) * (2 * rank), dtype=np.int64)
    for a, (size, out) in enumerate(zip(spatial, sizes)):
        windows = _windows(size, out)
        width = max(end - start for start, end in windows)
        idx = np.array([[min(start + j, end - 1) for j in range(width)]
                        for start, end in windows], dtype=np.int64)
        shape = [1] * (2 * rank)
        shape[a], shape[rank + a] = out, width
        flat = flat + (idx * row_sizes[a]).reshape(shape)
    return flat.reshape(math.prod(sizes), -1)


def _adaptive_max(where: str, rank: int, input: Tensor, output_size: Any,
                  return_indices: bool) -> Any:
    sizes = _prepare(where, rank, input, output_size)
    if input.ndim == rank + 1:  # one unbatched sample
        out = _adaptive_max(where, rank, input.unsqueeze(0), sizes, return_indices)
        return (out[0][0], out[1][0]) if return_indices else out[0]
    n, c = input.shape[:2]
    spatial = tuple(input.shape[2:])
    windows = _window_indices(spatial, sizes)
    flat = input.reshape(n, c, -1)
    table = pullback.tensor(windows, device=input.device)
    with pullback.no_grad():  # only *where* the maxima are: piecewise constant
        gathered = pullback.index_select(flat, 2, table.reshape(-1))
        first = gathered.reshape(n, c, windows.shape[0], windows.shape[1]).argmax(-1)
        where_max = pullback.take_along_axis(table.reshape((1, 1) + windows.shape),
                                             first.unsqueeze(-1), axis=-1).reshape(n, c, -1)
    out = pullback.take_along_axis(flat, where_max, axis=2).reshape((n, c) + sizes)
    if not return_indices:
        return out
    return out, where_max.reshape((n, c) + sizes)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, L) to a fixed length; with ``return_indices`` also the position
    of each maximum."""
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, H, W) to a fixed size; with ``return_indices`` also the flat
    position (``h * W + w``) of each maximum."""
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, D, H, W) to a fixed size; with ``return_indices`` also the flat
    position of each maximum."""
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)
