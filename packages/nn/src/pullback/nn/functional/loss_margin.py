"""Margin, ranking and embedding losses and the Poisson likelihood, with PyTorch's formulas
(ATen's ``Loss.cpp``), arguments and reductions: ``margin_ranking_loss``,
``hinge_embedding_loss``, ``soft_margin_loss``, ``multilabel_soft_margin_loss``,
``multilabel_margin_loss``, ``multi_margin_loss``, ``cosine_embedding_loss``,
``triplet_margin_loss``, ``triplet_margin_with_distance_loss``, ``poisson_nll_loss``.

Every function is a composition of differentiable ops, so gradients (to every floating input)
need no rules of their own."""

from __future__ import annotations

import math
from typing import Any, Callable

import pullback
from pullback._autocast_policy import autocast_function
from pullback.errors import DTypeError, ShapeError
from pullback.tensor import Tensor

from .activation import logsigmoid
from .distance import pairwise_distance
from .loss import check_reduction, legacy_reduction, reduce_


def _reduction(where: str, size_average: Any, reduce_: Any, reduction: str) -> str:
    reduction = legacy_reduction(size_average, reduce_, reduction)
    check_reduction(where, reduction)
    return reduction


@autocast_function("margin_ranking_loss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, -y (x1 - x2) + margin)``: ``y = 1`` wants ``x1`` ranked above ``x2``."""
    where = "margin_ranking_loss"
    reduction = _reduction(where, size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise ShapeError(f"{where}: inputs of shapes {tuple(input1.shape)}, "
                         f"{tuple(input2.shape)} and target {tuple(target.shape)} must have the "
                         "same number of dims")
    return reduce_(pullback.clamp(-target * (input1 - input2) + margin, min=0), reduction)


@autocast_function("hinge_embedding_loss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``x`` where ``y = 1``, ``max(0, margin - x)`` where ``y = -1`` (``x`` a distance)."""
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    zeros = input * 0
    pulled = pullback.where(target != 1, pullback.clamp(margin - input, min=0), zeros)
    kept = pullback.where(target != -1, input, zeros)
    return reduce_(pulled + kept, reduction)


@autocast_function("soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Two-class logistic loss ``log(1 + exp(-y x))`` for labels ``y`` in {-1, 1}."""
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    return reduce_(pullback.softplus(-input * target, threshold=math.inf), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per-class logistic loss of (N, C) logits and {0, 1} targets, averaged over classes."""
    reduction = _reduction("multilabel_soft_margin_loss", size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    classes = input.shape[input.ndim - 1] if input.ndim else 1
    return reduce_(loss.sum(axis=input.ndim - 1) / classes if input.ndim else loss, reduction)


def _class_rows(where: str, input: Tensor, target: Tensor, target_ndim: int) -> tuple[Tensor,
                                                                                   Tensor]:
    """(N, C) scores and integer targets with ``target_ndim`` dims per row (a 1-d input is
    one row)."""
    if target.dtype.kind not in "iu":
        raise DTypeError(f"{where}: targets must be integers, got dtype {target.dtype}")
    if input.ndim == 1:
        return input.unsqueeze(0), target.reshape((1,) + tuple(target.shape[-target_ndim:]) if
                                                  target_ndim else (1,))
    if input.ndim != 2:
        raise ShapeError(f"{where}: expected a 1-d or 2-d input, got shape {tuple(input.shape)}")
    return input, target


@autocast_function("multilabel_margin_loss")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge loss: ``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` over the target
    classes ``y_j`` (each row's class indices, ended by the first -1) and the other classes
    ``i``."""
    where = "multilabel_margin_loss"
    reduction = _reduction(where, size_average, reduce, reduction)
    scores, classes = _class_rows(where, input, target, 1)
    if tuple(classes.shape) != tuple(scores.shape):
        raise ShapeError(f"{where}: target of shape {tuple(target.shape)} must have the input's "
                         f"shape {tuple(input.shape)}")
    n, c = scores.shape
    listed = pullback.cumsum((classes < 0).to("int64"), axis=1) == 0  # before the first -1
    picked = pullback.where(listed, classes, 0)
    is_target = pullback.zeros(n, c, dtype=scores.dtype, device=scores.device).scatter_add(
        1, picked, listed.to(scores.dtype)) > 0
    target_scores = pullback.take_along_axis(scores, picked, axis=1)
    hinge = pullback.clamp(1 - target_scores.unsqueeze(2) + scores.unsqueeze(1), min=0)
    counted = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = (hinge * counted.to(scores.dtype)).sum(axis=(1, 2)) / c
    if input.ndim == 1 and reduction == "none":
        loss = loss[0]
    return reduce_(loss, reduction)


@autocast_function("multi_margin_loss")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge loss ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` (times
    ``weight[y]``) of (N, C) scores and class indices."""
    where = "multi_margin_loss"
    reduction = _reduction(where, size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"{where}: only p = 1 and p = 2 are supported, got {p}")
    scores, classes = _class_rows(where, input, target, 0)
    n, c = scores.shape
    if tuple(classes.shape) != (n,):
        raise ShapeError(f"{where}: target of shape {tuple(target.shape)} does not fit input "
                         f"{tuple(input.shape)}")
    picked = pullback.take_along_axis(scores, classes.reshape(n, 1), axis=1)
    # relu: no gradient where the margin is met exactly, as PyTorch's kernel (z > 0)
    hinge = pullback.relu(margin - picked + scores)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * pullback.index_select(weight, 0, classes).reshape(n, 1)
    others = pullback.one_hot(classes, c) == 0
    loss = (hinge * others.to(scores.dtype)).sum(axis=1) / c
    if input.ndim == 1 and reduction == "none":
        loss = loss[0]
    return reduce_(loss, reduction)


@autocast_function("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``y = 1``, ``max(0, cos(x1, x2) - margin)`` where ``y = -1``
    (ATen's cosine: squared norms plus 1e-12)."""
    reduction = _reduction("cosine_embedding_loss", size_average, reduce, reduction)
    axis = input1.ndim - 1
    dot = (input1 * input2).sum(axis=axis)
    squares1 = (input1 * input1).sum(axis=axis) + 1e-12
    squares2 = (input2 * input2).sum(axis=axis) + 1e-12
    cos = dot / pullback.sqrt(squares1 * squares2)
    zeros = cos * 0
    loss = (pullback.where(target == 1, 1 - cos, zeros)
            + pullback.where(target == -1, pullback.clamp(cos - margin, min=0), zeros))
    return reduce_(loss, reduction)


def _triplet(anchor: Tensor, positive: Tensor, negative: Tensor,
             distance: Callable[[Tensor, Tensor], Tensor], margin: float, swap: bool,
             reduction: str, where: str) -> Tensor:
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(f"{where}: anchor {tuple(anchor.shape)}, positive "
                         f"{tuple(positive.shape)} and negative {tuple(negative.shape)} must "
                         "have the same number of dims")
    to_positive = distance(anchor, positive)
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = pullback.minimum(to_negative, distance(positive, negative))
    return reduce_(pullback.clamp(margin + to_positive - to_negative, min=0), reduction)


@autocast_function("triplet_margin_loss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with the p-norm pairwise distance; ``swap``
    uses ``min(d(a, n), d(p, n))`` as the negative distance."""
    where = "triplet_margin_loss"
    reduction = _reduction(where, size_average, reduce, reduction)
    return _triplet(anchor, positive, negative,
                    lambda x, y: pairwise_distance(x, y, p, eps), margin, swap, reduction, where)


def triplet_margin_with_distance_loss(
        anchor: Tensor, positive: Tensor, negative: Tensor, *,
        distance_function: Callable[[Tensor, Tensor], Tensor] | None = None,
        margin: float = 1.0, swap: bool = False, reduction: str = "mean") -> Tensor:
    """:func:`triplet_margin_loss` with any ``distance_function`` (pairwise distance by
    default)."""
    where = "triplet_margin_with_distance_loss"
    check_reduction(where, reduction)
    if margin <= 0:
        raise ValueError(f"{where}: margin must be greater than 0, got {margin}")
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin,
                    swap, reduction, where)


@autocast_function("poisson_nll_loss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood: ``exp(x) - t x`` for log-rates (``log_input``), else
    ``x - t log(x + eps)``; ``full`` adds Stirling's ``t log t - t + log(2 pi t) / 2`` where
    ``t > 1``."""
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    if log_input:
        loss = pullback.exp(input) - target * input
    else:
        loss = input - target * pullback.log(input + eps)
    if full:
        big = target > 1
        safe = pullback.where(big, target, target * 0 + 2)
        stirling = safe * pullback.log(safe) - safe + 0.5 * pullback.log(2 * math.pi * safe)
        loss = loss + pullback.where(big, stirling, stirling * 0)
    return reduce_(loss, reduction)
