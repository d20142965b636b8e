"""``Categorical``: one of K classes, with probabilities or logits over the last dim."""

from __future__ import annotations

from typing import Any

from .. import _ops
from ..creation import as_tensor
from ..tensor import Tensor
from .distribution import Distribution, _check_probs_or_logits
from .utils import clamp_probs


class Categorical(Distribution):
    """PyTorch's ``Categorical(probs=None, logits=None)``: ``probs`` (normalized to sum to 1
    over the last dim) or unnormalized ``logits``; samples are class indices (int64).

    Example:
        >>> import pullback
        >>> m = pullback.distributions.Categorical(logits=pullback.zeros(2, 3))
        >>> m.sample((4,)).shape, m.entropy().shape
        ((4, 2), (2,))
    """

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _check_probs_or_logits("Categorical", probs, logits)
        if probs is not None:
            probs = as_tensor(probs)
            self.probs = probs / probs.sum(-1, keepdim=True)
            self.logits = _ops.log(clamp_probs(self.probs))
        else:
            logits = as_tensor(logits)
            self.logits = logits - _ops.logsumexp(logits, -1, keepdim=True)
            self.probs = _ops.exp(self.logits)
        self._num_events = self.probs.shape[-1]
        super().__init__(self.probs.shape[:-1])

    def sample(self, sample_shape: Any = ()) -> Tensor:
        from ..autograd import no_grad

        sample_shape = tuple(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        with no_grad():
            flat = self.probs.detach().reshape(-1, self._num_events)
            draws = _ops.multinomial(flat, n, replacement=True)  # (batch, n)
            return draws.t().reshape(sample_shape + self.batch_shape)

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value).long()
        value, logits = _ops.broadcast_tensors(value.unsqueeze(-1), self.logits)
        return _ops.gather(logits, -1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        from .._introspection import finfo

        # PyTorch's clamp: a zero probability has logit -inf, and 0 * -inf would be NaN.
        logits = _ops.clamp(self.logits, min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    @property
    def mode(self) -> Tensor:
        """The most probable class."""
        return self.probs.argmax(-1)

    def __repr__(self) -> str:
        return f"Categorical(probs: {self.probs.shape})"
