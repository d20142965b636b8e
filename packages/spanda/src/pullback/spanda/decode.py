"""Decoders: output spikes ``(T, B, C)`` to per-class scores and predictions.

* :class:`RateDecoder`: firing rates; the prediction is the class that fired most (snnTorch's
  ``accuracy_rate``);
* :class:`FirstSpikeDecoder`: time of each class's first spike; the prediction is the class that
  fired first (snnTorch's ``accuracy_temporal``). A class that never fires gets time ``T``
  (snnTorch puts it at ``T - 1``, tied with one that fires at the last step).

Ties go to the lowest class index (as in snnTorch), or, given the output membrane, to the class
with the highest mean membrane among those tied: with enough steps several outputs can fire at
every step, and the lowest index then wins every such tie.
"""

from __future__ import annotations

import pullback
from pullback.errors import ShapeError
from pullback.nn import Module
from pullback.tensor import Tensor

__all__ = ["FirstSpikeDecoder", "RateDecoder", "first_spike_time", "firing_rate"]


def _check(where: str, spikes: Tensor) -> None:
    if spikes.ndim != 3:
        raise ShapeError(f"{where}: expected spikes (T, B, classes), got shape "
                         f"{tuple(spikes.shape)}")


def firing_rate(spikes: Tensor) -> Tensor:
    """Spikes per step of each output, ``(B, C)`` (differentiable)."""
    _check("firing_rate", spikes)
    return spikes.mean(axis=0)


def first_spike_time(spikes: Tensor) -> Tensor:
    """The step of each output's first spike, ``(B, C)`` floats; ``T`` where it never fires
    (not differentiable)."""
    _check("first_spike_time", spikes)
    steps = spikes.shape[0]
    with pullback.no_grad():
        fired = spikes.detach() > 0
        first = fired.to(pullback.int64).argmax(axis=0)  # the first True (0 if none)
        return pullback.where(fired.any(axis=0), first.to(spikes.dtype),
                              float(steps)).to(spikes.dtype)


class RateDecoder(Module):
    """Firing rates ``(B, C)`` of output spikes ``(T, B, C)``; :meth:`predict` gives classes."""

    def forward(self, spikes: Tensor) -> Tensor:
        return firing_rate(spikes)

    def predict(self, spikes: Tensor, membrane: Tensor | None = None) -> Tensor:
        """The class that fired most, ``(B,)`` int64; ties to the highest mean ``membrane``
        ``(T, B, C)`` when it is given, else to the lowest index."""
        counts = spikes.detach().sum(axis=0)
        if membrane is None:
            return counts.argmax(axis=1)
        if tuple(membrane.shape) != tuple(spikes.shape):
            raise ShapeError(f"RateDecoder.predict: membrane of shape {tuple(membrane.shape)} "
                             f"does not match spikes {tuple(spikes.shape)}")
        tied = counts == counts.amax(axis=1, keepdims=True)
        return pullback.where(tied, membrane.detach().mean(axis=0), float("-inf")).argmax(axis=1)


class FirstSpikeDecoder(Module):
    """First-spike times ``(B, C)`` of output spikes ``(T, B, C)``; :meth:`predict` gives
    classes."""

    def forward(self, spikes: Tensor) -> Tensor:
        return first_spike_time(spikes)

    def predict(self, spikes: Tensor) -> Tensor:
        """The class that fired first, ``(B,)`` int64."""
        return first_spike_time(spikes).argmin(axis=1)
