"""``ctc_loss``: connectionist temporal classification (PyTorch's ``F.ctc_loss``), its
forward-backward recursions in :mod:`pullback.nn._ops.ctc` wrapped in an autograd Function."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback
from pullback._autocast_policy import autocast_function
from pullback.autograd import Function
from pullback.errors import ArgumentError, DTypeError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_float
from .._ops import ctc
from .loss import check_reduction


class _CTC(Function):
    """Per-sample negative log-likelihoods (N,) of log-probabilities (T, N, C)."""

    @staticmethod
    def forward(ctx: Any, log_probs: Tensor, targets: Any, input_lengths: Any,
                target_lengths: Any, blank: int, zero_infinity: bool) -> Tensor:
        xp = log_probs.device.backend.xp
        lp = log_probs.array
        nll, alpha, beta, labels = ctc.forward_backward(xp, lp, targets, input_lengths,
                                                        target_lengths, blank)
        # The gradient of an impossible alignment (infinite loss) is 0 either way.
        ctx.saved = (lp, nll, alpha, beta, labels, input_lengths)
        if zero_infinity:
            nll = xp.where(xp.isinf(nll), 0.0, nll)
        return Tensor._wrap(nll.astype(lp.dtype), log_probs.device)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Any, ...]:
        lp, nll, alpha, beta, labels, input_lengths = ctx.saved
        xp = grad.device.backend.xp
        out = ctc.log_probs_grad(xp, lp, nll, alpha, beta, labels, input_lengths,
                                 grad.array.astype(lp.dtype))
        return Tensor._wrap(out.astype(lp.dtype), grad.device), None, None, None, None, None


def _lengths(where: str, name: str, value: Any, n: int) -> np.ndarray:
    array = np.asarray(value.array if isinstance(value, Tensor) else value)
    if array.dtype.kind not in "iu":
        raise DTypeError(f"{where}: {name} must be integers, got {array.dtype}")
    array = array.astype(np.int64).reshape(-1)
    if array.shape != (n,):
        raise ShapeError(f"{where}: {name} must have one entry per sequence ({n}), got shape "
                         f"{array.shape}")
    return array


@autocast_function("ctc_loss")
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss of log-probabilities (T, N, C) (or (T, C) for one sequence) against
    targets (N, S) padded, or all targets concatenated (sum of target_lengths,).

    ``reduction="mean"`` divides each sequence's loss by its target length, then averages
    (PyTorch's convention); ``zero_infinity`` sets losses of impossible alignments (and their
    gradients) to 0. The gradient is the exact one of ``-log p`` with respect to
    ``log_probs``; after ``log_softmax`` (how CTC is used) it equals PyTorch's, which adds
    ``exp(log_probs)`` to it because it assumes that normalization.
    """
    where = "ctc_loss"
    check_reduction(where, reduction)
    expect_float(where, log_probs)
    if log_probs.ndim == 2:  # one unbatched sequence
        loss = ctc_loss(log_probs.unsqueeze(1), targets.reshape(1, -1) if targets.ndim else
                        targets, [int(np.asarray(input_lengths).reshape(-1)[0])],
                        [int(np.asarray(target_lengths).reshape(-1)[0])], blank, reduction,
                        zero_infinity)
        return loss[0] if reduction == "none" else loss
    if log_probs.ndim != 3:
        raise ShapeError(f"{where}: expected log_probs of shape (T, N, C) or (T, C), got "
                         f"{tuple(log_probs.shape)}")
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise ArgumentError(f"{where}: blank {blank} is not one of the {c} classes")
    in_lengths = _lengths(where, "input_lengths", input_lengths, n)
    tg_lengths = _lengths(where, "target_lengths", target_lengths, n)
    if in_lengths.size and (in_lengths.min() < 0 or in_lengths.max() > t_max):
        raise ShapeError(f"{where}: input_lengths {in_lengths.tolist()} must lie in [0, {t_max}]")
    if tg_lengths.size and tg_lengths.min() < 0:
        raise ShapeError(f"{where}: target_lengths {tg_lengths.tolist()} must be non-negative")
    flat = np.asarray(targets.array if isinstance(targets, Tensor) else targets)
    if flat.dtype.kind not in "iu":
        raise DTypeError(f"{where}: targets must be integers, got {flat.dtype}")
    if flat.ndim == 2:
        if flat.shape[0] != n or (tg_lengths.size and tg_lengths.max() > flat.shape[1]):
            raise ShapeError(f"{where}: targets of shape {flat.shape} do not fit {n} sequences "
                             f"of target_lengths {tg_lengths.tolist()}")
        padded = flat.astype(np.int64)
    else:
        if flat.size != tg_lengths.sum():
            raise ShapeError(f"{where}: {flat.size} concatenated targets, but target_lengths "
                             f"sum to {int(tg_lengths.sum())}")
        padded = np.zeros((n, int(tg_lengths.max(initial=0))), dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(tg_lengths)[:-1]])
        for i, (start, length) in enumerate(zip(starts, tg_lengths)):
            padded[i, :length] = flat[start:start + length]
    used = padded[np.arange(padded.shape[1])[None, :] < tg_lengths[:, None]]
    if used.size and (used.min() < 0 or used.max() >= c):
        raise ShapeError(f"{where}: targets must be class indices in [0, {c}), got "
                         f"[{used.min()}, {used.max()}]")
    on_device = [log_probs.device.backend.asarray(a, index=log_probs.device.index or 0)
                 for a in (padded, in_lengths, tg_lengths)]
    losses = _CTC.apply(log_probs, *on_device, int(blank), bool(zero_infinity))
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    divisor = pullback.tensor(np.maximum(tg_lengths, 1), dtype=losses.dtype,
                              device=losses.device)
    return (losses / divisor).mean()
