"""Pooling: ``max_pool2d`` and ``avg_pool2d`` (fused ops) and ``adaptive_avg_pool2d`` (two
averaging matrices: the windows of adaptive pooling are separable)."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback
from pullback.dispatch import apply
from pullback.errors import ArgumentError
from pullback.tensor import Tensor

from .._checks import expect_ndim, pair
from .._ops.geometry import check_geometry, check_number_dtype, check_windows
from .._ops.pool import AVG_POOL2D, MAX_POOL2D


def _geometry(where: str, x: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any = 1, floating_only: bool = False) -> dict[str, Any]:
    expect_ndim(where, x, (4,))
    check_number_dtype(where, x, floating_only)
    kernel = pair(kernel_size, where, "kernel_size")
    step = kernel if stride is None or stride == () else pair(stride, where, "stride")
    pad = pair(padding, where, "padding")
    dil = pair(dilation, where, "dilation")
    pads = ((pad[0], pad[0]), (pad[1], pad[1]))
    check_geometry(where, kernel, step, pads, dil)
    if any(p > k // 2 for p, k in zip(pad, kernel)):
        raise ArgumentError(f"{where}: padding {pad} must be at most half the kernel size "
                            f"{kernel}")
    check_windows(where, tuple(x.shape), kernel, step, pads, dil)
    return dict(kernel_size=kernel, stride=step, padding=pads, dilation=dil)


def _batched(fn: Any, x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Run a 4-d function on a 3-d (C, H, W) input as a batch of one."""
    return fn(x.unsqueeze(0), *args, **kwargs)[0]


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1) -> Tensor:
    """Max over windows of (N, C, H, W); the gradient goes to each window's first maximum."""
    if input.ndim == 3:
        return _batched(max_pool2d, input, kernel_size, stride, padding, dilation)
    return apply(MAX_POOL2D, input,
                 **_geometry("max_pool2d", input, kernel_size, stride, padding, dilation))


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               count_include_pad: bool = True) -> Tensor:
    """Mean over windows of (N, C, H, W); padded zeros count unless ``count_include_pad`` is
    false."""
    if input.ndim == 3:
        return _batched(avg_pool2d, input, kernel_size, stride, padding, count_include_pad)
    geometry = _geometry("avg_pool2d", input, kernel_size, stride, padding, floating_only=True)
    del geometry["dilation"]
    return apply(AVG_POOL2D, input, count_include_pad=bool(count_include_pad), **geometry)


def _averaging_matrix(size: int, out: int, x: Tensor) -> Tensor:
    """(out, size) matrix whose row i averages PyTorch's adaptive window i."""
    m = np.zeros((out, size), dtype=x.dtype)
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        m[i, start:end] = 1.0 / (end - start)
    return pullback.tensor(m, dtype=x.dtype, device=x.device)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Average pooling to a fixed (H_out, W_out) (``None`` keeps that axis's size)."""
    if input.ndim == 3:
        return _batched(adaptive_avg_pool2d, input, output_size)
    expect_ndim("adaptive_avg_pool2d", input, (4,))
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    oh, ow = (s if s is not None else input.shape[2 + i] for i, s in enumerate(output_size))
    if oh < 1 or ow < 1:
        raise ArgumentError(f"adaptive_avg_pool2d: output size must be positive, got {output_size}")
    rows = _averaging_matrix(input.shape[2], oh, input)
    cols = _averaging_matrix(input.shape[3], ow, input)
    return rows @ input @ cols.mT
