"""Distances and similarities between vectors: ``pairwise_distance``, ``cosine_similarity``,
``pdist``; and ``one_hot`` (core's)."""

from __future__ import annotations

import numpy as np

import pullback
from pullback._autocast_policy import autocast_function
from pullback.errors import ShapeError
from pullback.tensor import Tensor

one_hot = pullback.one_hot


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of ``x1 - x2 + eps`` along the last axis (PyTorch's formula: ``eps`` keeps
    the norm's gradient finite for equal vectors)."""
    diff = x1 - x2 + eps
    axis = max(x1.ndim, x2.ndim) - 1
    if axis < 0:
        return pullback.norm(diff, p)
    return pullback.norm(diff, p, axis=axis, keepdims=keepdim)


@autocast_function("cosine_similarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1 . x2 / (max(||x1||, eps) max(||x2||, eps))`` along ``dim`` (inputs broadcast).

    As in PyTorch each vector is divided by its norm before the product, and the norms are
    clamped at ``eps`` for the value only: their gradient is the unclamped norm's."""
    x1, x2 = _broadcast(x1, x2)
    n1 = _value_clamped(pullback.norm(x1, 2, axis=dim, keepdims=True), eps)
    n2 = _value_clamped(pullback.norm(x2, 2, axis=dim, keepdims=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(axis=dim)


def _broadcast(x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor]:
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    return pullback.broadcast_to(x1, shape), pullback.broadcast_to(x2, shape)


def _value_clamped(norm: Tensor, eps: float) -> Tensor:
    return norm + (pullback.clamp(norm, min=eps) - norm).detach()


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distances between every pair of rows ``i < j`` of an (N, M) input, in the
    order of the upper triangle (N (N - 1) / 2 values)."""
    if input.ndim != 2:
        raise ShapeError(f"pdist: expected a 2-d input, got shape {tuple(input.shape)}")
    rows, cols = np.triu_indices(input.shape[0], 1)
    first = pullback.index_select(input, 0, pullback.tensor(rows, device=input.device))
    second = pullback.index_select(input, 0, pullback.tensor(cols, device=input.device))
    return pullback.norm(first - second, p, axis=1)
