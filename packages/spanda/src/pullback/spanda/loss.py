"""Losses on output spikes or membranes ``(T, B, C)`` against class targets ``(B,)``.

* :func:`spike_count_cross_entropy`: cross-entropy of the spike counts as logits (snnTorch's
  ``ce_count_loss``);
* :func:`rate_cross_entropy`: cross-entropy at every step, averaged over the steps (snnTorch's
  ``ce_rate_loss``); on membranes it is snnTorch tutorial 5's loss (divided by ``T``);
* :func:`membrane_mse`: mean squared error of the membrane against ``on_target`` for the
  right class and ``off_target`` elsewhere, at every step (snnTorch's ``mse_membrane_loss``);
* :func:`max_membrane_cross_entropy`: cross-entropy of each class's highest membrane
  (snnTorch's ``ce_max_membrane_loss``);
* :func:`rate_mse`: mean squared error of the firing rates against ``correct_rate`` and
  ``incorrect_rate`` (snnTorch's ``mse_count_loss`` is ``T`` times it when ``T * rate`` are
  whole numbers: it compares counts and divides by ``T`` once).
"""

from __future__ import annotations

import pullback
from pullback.errors import ShapeError
from pullback.nn import functional as F
from pullback.tensor import Tensor

__all__ = ["max_membrane_cross_entropy", "membrane_mse", "rate_cross_entropy", "rate_mse",
           "spike_count_cross_entropy"]


def _check(where: str, outputs: Tensor, targets: Tensor) -> None:
    if outputs.ndim != 3:
        raise ShapeError(f"{where}: expected outputs (T, B, classes), got shape "
                         f"{tuple(outputs.shape)}")
    if tuple(targets.shape) != (outputs.shape[1],):
        raise ShapeError(f"{where}: expected targets of shape ({outputs.shape[1]},) (class "
                         f"indices, one per sample), got {tuple(targets.shape)}")


def _one_hot_targets(outputs: Tensor, targets: Tensor, on: float, off: float) -> Tensor:
    hot = pullback.one_hot(targets, outputs.shape[-1]).to(outputs.dtype)
    return hot * (on - off) + off


def spike_count_cross_entropy(spikes: Tensor, targets: Tensor) -> Tensor:
    """``cross_entropy(spikes.sum(0), targets)``, averaged over the batch."""
    _check("spike_count_cross_entropy", spikes, targets)
    return F.cross_entropy(spikes.sum(axis=0), targets)


def rate_cross_entropy(outputs: Tensor, targets: Tensor) -> Tensor:
    """``mean_t cross_entropy(outputs[t], targets)`` (spikes or membranes as each step's logits),
    each averaged over the batch."""
    _check("rate_cross_entropy", outputs, targets)
    steps, batch = outputs.shape[0], outputs.shape[1]
    flat_targets = targets.unsqueeze(0).broadcast_to((steps, batch)).reshape(steps * batch)
    return F.cross_entropy(outputs.reshape(steps * batch, outputs.shape[2]), flat_targets)


def max_membrane_cross_entropy(membrane: Tensor, targets: Tensor) -> Tensor:
    """``cross_entropy(membrane.max(0), targets)``, averaged over the batch (tied maxima share
    the gradient; PyTorch's ``max`` gives it to one of them)."""
    _check("max_membrane_cross_entropy", membrane, targets)
    return F.cross_entropy(membrane.amax(axis=0), targets)


def membrane_mse(membrane: Tensor, targets: Tensor, on_target: float = 1.0,
                 off_target: float = 0.0) -> Tensor:
    """Mean over steps, samples and classes of ``(membrane - target)^2``."""
    _check("membrane_mse", membrane, targets)
    return F.mse_loss(membrane, _one_hot_targets(membrane, targets, on_target, off_target)
                      .unsqueeze(0).broadcast_to(tuple(membrane.shape)))


def rate_mse(spikes: Tensor, targets: Tensor, correct_rate: float = 0.8,
             incorrect_rate: float = 0.2) -> Tensor:
    """Mean over samples and classes of ``(firing rate - target rate)^2``."""
    _check("rate_mse", spikes, targets)
    return F.mse_loss(spikes.mean(axis=0),
                      _one_hot_targets(spikes, targets, correct_rate, incorrect_rate))
