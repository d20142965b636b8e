"""Loss functions with PyTorch's semantics (arguments, reductions, edge rules), written in stable
forms: cross-entropy through the fused ``nn.cross_entropy``/``nn.log_softmax`` ops, logistic
losses through softplus, KL divergence through ``x log x`` with ``0 log 0 = 0``."""

from __future__ import annotations

import math
import warnings
import numpy as np

import pullback
from pullback._autocast_policy import autocast_function
from pullback.dispatch import apply
from pullback.errors import DTypeError, IndexOutOfRangeError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_float
from .._ops.cross_entropy import CROSS_ENTROPY
from .activation import log_softmax

_REDUCTIONS = ("none", "mean", "sum")


def check_reduction(where: str, reduction: str, allowed: tuple[str, ...] = _REDUCTIONS) -> None:
    """Raise a ValueError naming ``where`` unless ``reduction`` is one of ``allowed``."""
    if reduction not in allowed:
        raise ValueError(f"{where}: reduction must be one of {allowed}, got {reduction!r}")


def legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """The reduction PyTorch's deprecated ``size_average`` and ``reduce`` flags stand for (they
    override ``reduction`` when either is given)."""
    if size_average is None and reduce is None:
        return reduction
    if reduce is False:
        legacy = "none"
    else:
        legacy = "mean" if size_average is None or size_average else "sum"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{legacy}' instead.", UserWarning, stacklevel=3)
    return legacy


def reduce_(loss: Tensor, reduction: str) -> Tensor:
    """The mean, the sum, or (``"none"``) the elementwise ``loss``. (The trailing underscore:
    the losses take PyTorch's deprecated ``reduce`` flag, which would hide the name.)"""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _same_shape(where: str, input: Tensor, target: Tensor) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ShapeError(f"{where}: input of shape {tuple(input.shape)} and target of shape "
                         f"{tuple(target.shape)} must have the same shape")


def _broadcast(where: str, input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``input`` and ``target`` broadcast together, with PyTorch's warning when their shapes
    differ (a (N, 1) prediction against (N,) targets is usually a bug, but PyTorch computes
    it, and ported scripts reach its numbers only if we do too)."""
    if tuple(input.shape) == tuple(target.shape):
        return input, target
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(target.shape))
    except ValueError:
        _same_shape(where, input, target)
        raise
    warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input "
                  f"size ({tuple(input.shape)}). This will likely lead to incorrect results due "
                  f"to broadcasting. Please ensure they have the same size. ({where} broadcasts "
                  f"both to {shape})", UserWarning, stacklevel=3)
    return pullback.broadcast_to(input, shape), pullback.broadcast_to(target, shape)


def _weighted(where: str, loss: Tensor, weight: Tensor | None, reduction: str,
              mean_by_weight: bool) -> Tensor:
    """``loss`` reduced, optionally weighted (the mean divides by the total weight where
    PyTorch does: MSE and L1; Huber takes the plain mean)."""
    if weight is None:
        return reduce_(loss, reduction)
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError(f"{where}: weights of shape {tuple(weight.shape)} and input of shape "
                         f"{tuple(loss.shape)} must have the same size")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return reduce_(loss, reduction)


@autocast_function("mse_loss")
def mse_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
             reduce: bool | None = None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:
    """Squared error ``(input - target)^2`` (``weight``: per element; the mean divides by its
    sum)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction("mse_loss", reduction)
    input, target = _broadcast("mse_loss", input, target)
    diff = input - target
    return _weighted("mse_loss", diff * diff, weight, reduction, mean_by_weight=True)


@autocast_function("l1_loss")
def l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
            reduce: bool | None = None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:
    """Absolute error ``|input - target|`` (``weight``: per element; the mean divides by its
    sum)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction("l1_loss", reduction)
    input, target = _broadcast("l1_loss", input, target)
    return _weighted("l1_loss", pullback.abs(input - target), weight, reduction,
                     mean_by_weight=True)


@autocast_function("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere."""
    check_reduction("huber_loss", reduction)
    input, target = _broadcast("huber_loss", input, target)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = input - target
    ad = pullback.abs(d)
    loss = pullback.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
    return _weighted("huber_loss", loss, weight, reduction, mean_by_weight=False)


@autocast_function("smooth_l1_loss")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                   reduce: bool | None = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (L1 for beta=0)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction("smooth_l1_loss", reduction)
    input, target = _broadcast("smooth_l1_loss", input, target)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = input - target
    ad = pullback.abs(d)
    if beta == 0:
        return reduce_(ad, reduction)
    return reduce_(pullback.where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta), reduction)


def _classes_last(input: Tensor) -> Tensor:
    """(N, C, d1, ...) -> (N*d1*..., C): the class axis last, rows flattened."""
    c = input.shape[1]
    if input.ndim > 2:
        input = input.permute(0, *range(2, input.ndim), 1)
    return input.reshape(-1, c)


def _class_targets(where: str, input: Tensor, target: Tensor, ignore_index: int) -> Tensor:
    """Check integer targets against (N, C, d1...) input; return them flattened."""
    if target.dtype.kind not in "iu":
        raise DTypeError(f"{where}: class-index targets must be integers, got {target.dtype}")
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expected:
        raise ShapeError(f"{where}: input of shape {tuple(input.shape)} needs a target of shape "
                         f"{expected}, got {tuple(target.shape)}")
    flat = target.reshape(-1)
    data = flat.array[flat.array != ignore_index]
    c = input.shape[1]
    if data.size and (int(data.min()) < 0 or int(data.max()) >= c):
        bad = int(data.min()) if int(data.min()) < 0 else int(data.max())
        raise IndexOutOfRangeError(f"{where}: target {bad} is out of range for {c} classes "
                                   f"(ignore_index={ignore_index})")
    return flat


def _target_weights(weight: Tensor | None, flat_target: Tensor, ignore_index: int,
                    like: Tensor) -> Tensor:
    """Per-row weight ``weight[target]`` (1 without weights), 0 on ignored rows."""
    # Ops, not array code, so that vmap batches the weights with the targets.
    valid = flat_target != ignore_index
    if weight is None:
        return valid.to(like.dtype)
    picked = pullback.index_select(weight.detach(), 0, pullback.where(valid, flat_target, 0))
    return pullback.where(valid, picked, 0.0).to(like.dtype)


def _unbatched(input: Tensor, target: Tensor, soft: bool) -> tuple[Tensor, Tensor]:
    return input.unsqueeze(0), (target.unsqueeze(0) if soft or target.ndim == 0 else target)


@autocast_function("cross_entropy")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits (N, C) or (N, C, d1, ...) or (C,).

    ``target`` holds class indices (integers, shape (N, d1, ...)) or class probabilities (same
    shape as ``input``). ``weight`` rescales classes, ``ignore_index`` skips targets (index form),
    ``label_smoothing`` mixes the target with the uniform distribution. ``"mean"`` divides by
    the total weight of the counted targets, as in PyTorch.
    """
    where = "cross_entropy"
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(where, reduction)
    expect_float(where, input)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{where}: label_smoothing must be in [0, 1], got {label_smoothing}")
    soft = target.dtype.kind in "fV"
    if input.ndim == 1:
        loss = cross_entropy(*_unbatched(input, target, soft), weight, None, ignore_index, None,
                             reduction, label_smoothing)
        return loss[0] if reduction == "none" else loss
    c = input.shape[1]
    if weight is not None and tuple(weight.shape) != (c,):
        raise ShapeError(f"{where}: weight of shape {tuple(weight.shape)} does not fit {c} "
                         "classes")
    if soft:
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    flat_target = _class_targets(where, input, target, ignore_index)
    logits = _classes_last(input)
    nll = apply(CROSS_ENTROPY, logits, flat_target, ignore_index=int(ignore_index))
    row_weight = None
    if weight is not None:
        row_weight = _target_weights(weight, flat_target, ignore_index, input)
        nll = nll * row_weight
    smooth = None
    if label_smoothing > 0:
        logp = log_softmax(logits, dim=1)
        if weight is not None:
            logp = logp * weight.detach()
        valid = flat_target != ignore_index
        smooth = pullback.where(valid, -logp.sum(axis=1), 0.0)
    if reduction == "none":
        loss = nll * (1 - label_smoothing) if smooth is not None else nll
        if smooth is not None:
            loss = loss + smooth * (label_smoothing / c)
        return loss.reshape(tuple(target.shape))
    total = nll.sum()
    if smooth is not None:
        total = total * (1 - label_smoothing) + smooth.sum() * (label_smoothing / c)
    if reduction == "sum":
        return total
    if row_weight is None:
        row_weight = _target_weights(None, flat_target, ignore_index, input)
    return total / row_weight.sum()


def _soft_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                        label_smoothing: float) -> Tensor:
    _same_shape("cross_entropy", input, target)
    c = input.shape[1]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / c
    terms = log_softmax(input, dim=1) * target
    if weight is not None:
        terms = terms * weight.reshape((1, c) + (1,) * (input.ndim - 2))
    per_row = -terms.sum(axis=1)
    return reduce_(per_row, reduction)


@autocast_function("nll_loss")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: bool | None = None, ignore_index: int = -100,
             reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities (N, C) or (N, C, d1, ...) at class indices;
    ``"mean"`` divides by the total weight of the counted targets."""
    where = "nll_loss"
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(where, reduction)
    expect_float(where, input)
    if input.ndim == 1:
        loss = nll_loss(*_unbatched(input, target, False), weight, None, ignore_index, None,
                        reduction)
        return loss[0] if reduction == "none" else loss
    flat_target = _class_targets(where, input, target, ignore_index)
    logp = _classes_last(input)
    safe = pullback.where(flat_target != ignore_index, flat_target, 0).reshape(-1, 1)
    picked = pullback.take_along_axis(logp, safe, axis=1).reshape(-1)
    row_weight = _target_weights(weight, flat_target, ignore_index, input)
    # through where, an ignored target's gradient is 0 even when the mean divides by a total
    # weight of 0 (PyTorch skips them: its loss is NaN, their gradient 0)
    loss = pullback.where(flat_target != ignore_index, -picked * row_weight, 0.0)
    if reduction == "none":
        return loss.reshape(tuple(target.shape))
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / row_weight.sum()


@autocast_function("binary_cross_entropy")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` for probabilities ``x`` in [0, 1]; logs are clamped
    at -100 as in PyTorch. Prefer :func:`binary_cross_entropy_with_logits` (stable)."""
    where = "binary_cross_entropy"
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(where, reduction)
    _same_shape(where, input, target)
    data = input.array
    if data.size and (float(data.min()) < 0 or float(data.max()) > 1):
        raise ValueError(f"{where}: input values must be probabilities in [0, 1], got range "
                         f"[{float(data.min())}, {float(data.max())}]")
    loss = _bce_elementwise(input, target)
    if weight is not None:
        loss = loss * weight
    return reduce_(loss, reduction)


def _bce_elementwise(x: Tensor, t: Tensor) -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` with PyTorch's clamp of the logs at -100 and PyTorch's
    gradient, ``(x - t) / max(x (1 - x), 1e-12)``, finite at probabilities of exactly 0 and 1
    (the derivative of a clamped log is ``0 * inf`` there). Inside, where ``x (1 - x) >=
    1e-12``, autograd of the logs is that gradient; at the edges the value comes from the
    detached input and the gradient from a linear term that is 0 in value. Only ops: vmap, the
    compiler and higher-order gradients go through it."""

    def clamped(p: Tensor) -> Tensor:
        return -(t * pullback.clamp(pullback.log(p), min=-100.0)
                 + (1.0 - t) * pullback.clamp(pullback.log(1.0 - p), min=-100.0))

    x_fixed = x.detach()
    inside = x_fixed * (1.0 - x_fixed) >= 1e-12
    edge = clamped(x_fixed) + (x_fixed - t.detach()) / 1e-12 * (x - x_fixed)
    return pullback.where(inside, clamped(pullback.where(inside, x, 0.5)), edge)


@autocast_function("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Logistic loss of logits: ``(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x)``.

    ``softplus(-x) = -log(sigmoid(x))`` is computed without overflow for any ``x``;
    ``pos_weight`` weighs positive targets (broadcast along the last axis, as in PyTorch).
    """
    where = "binary_cross_entropy_with_logits"
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(where, reduction)
    _same_shape(where, input, target)
    # threshold=inf: the exact log1p form everywhere (the default switches to x above 20,
    # which is off by e^-20 and fails float64 parity).
    neg_log_sigmoid = pullback.softplus(-input, threshold=math.inf)
    if pos_weight is not None:
        neg_log_sigmoid = neg_log_sigmoid * ((pos_weight - 1.0) * target + 1.0)
    loss = (1.0 - target) * input + neg_log_sigmoid
    if weight is not None:
        loss = loss * weight
    return reduce_(loss, reduction)


@autocast_function("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL divergence with ``input`` as log-probabilities: ``t (log t - input)`` pointwise
    (``0 log 0 = 0``); ``"batchmean"`` divides the sum by the batch size (the true KL)."""
    where = "kl_div"
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(where, reduction, _REDUCTIONS + ("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=3)
    _same_shape(where, input, target)
    if log_target:
        loss = pullback.exp(target) * (target - input)
    else:
        positive = target > 0
        safe = pullback.where(positive, target, 1.0)
        loss = pullback.where(positive, target * pullback.log(safe), 0.0) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return reduce_(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Gaussian negative log-likelihood ``0.5 (log var + (input - target)^2 / var)`` (+ the
    constant ``0.5 log 2 pi`` when ``full``), PyTorch's semantics: ``var`` may lack the last
    axis or have size 1 there (one variance per row); it is clamped at ``eps`` for the value,
    while its gradient passes through the clamp unchanged."""
    where = "gaussian_nll_loss"
    check_reduction(where, reduction)
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ShapeError(f"{where}: var of shape {tuple(var.shape)} fits neither input "
                             f"{tuple(input.shape)} nor one variance per row")
    if var.numel() and float(var.array.min()) < 0:
        raise ValueError(f"{where}: var has negative entries")
    # Clamp the value only: PyTorch clamps a copy under no_grad, so d(loss)/d(var) is taken at
    # the clamped value and passed straight through.
    var = var + (pullback.clamp(var, min=eps) - var).detach()
    diff = input - target
    loss = 0.5 * (pullback.log(var) + diff * diff / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_(loss, reduction)
