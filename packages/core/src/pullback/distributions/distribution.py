"""The base class of pullback.distributions (PyTorch's ``Distribution`` shape vocabulary)."""

from __future__ import annotations

from typing import Any

from ..errors import ArgumentError
from ..tensor import Tensor


class Distribution:
    """A distribution with a ``batch_shape`` (independent distributions side by side) and an
    ``event_shape`` (the shape of one draw); subclasses implement ``sample``, ``log_prob`` and
    ``entropy``."""

    def __init__(self, batch_shape: tuple[int, ...] = (), event_shape: tuple[int, ...] = ()) \
            -> None:
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The shape of the batch of distributions."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        """The shape of one sample of one distribution."""
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> tuple[int, ...]:
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Draw ``sample_shape`` samples (outside the autograd graph)."""
        raise NotImplementedError(f"{type(self).__name__}.sample")

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the probability (density or mass) of ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob")

    def entropy(self) -> Tensor:
        """The entropy of each distribution of the batch."""
        raise NotImplementedError(f"{type(self).__name__}.entropy")

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _check_probs_or_logits(name: str, probs: Any, logits: Any) -> None:
    """PyTorch's check: exactly one of ``probs`` and ``logits``."""
    if (probs is None) == (logits is None):
        raise ArgumentError(f"{name}: Either `probs` or `logits` must be specified, but not "
                            "both.")

