"""``Bernoulli``: 0 or 1, with a probability or a logit of 1."""

from __future__ import annotations

from typing import Any

from .. import _ops
from ..creation import as_tensor
from ..tensor import Tensor
from .distribution import Distribution, _check_probs_or_logits
from .utils import clamp_probs


class Bernoulli(Distribution):
    """PyTorch's ``Bernoulli(probs=None, logits=None)``; samples are 0.0 or 1.0 in the
    parameter's dtype."""

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _check_probs_or_logits("Bernoulli", probs, logits)
        if probs is not None:
            self.probs = as_tensor(probs)
            clamped = clamp_probs(self.probs)  # PyTorch's probs_to_logits
            self.logits = _ops.log(clamped) - _ops.log1p(-clamped)
        else:
            self.logits = as_tensor(logits)
            self.probs = _ops.sigmoid(self.logits)
        super().__init__(self.probs.shape)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        from ..autograd import no_grad

        with no_grad():
            p = self.probs.detach().expand(tuple(sample_shape) + self.batch_shape)
            return _ops.bernoulli(p)

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value, dtype=self.logits.dtype)
        # -BCE with logits: value * logit - softplus(logit), written to be stable.
        return value * self.logits - _ops.softplus(self.logits)

    def entropy(self) -> Tensor:
        return _ops.softplus(self.logits) - self.probs * self.logits

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)
