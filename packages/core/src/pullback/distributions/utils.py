"""Helpers of the distributions under torch.distributions.utils' names."""

from __future__ import annotations

from ..tensor import Tensor


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept inside (eps, 1 - eps), as PyTorch before taking their logs (a zero
    probability then has a finite log and finite gradients)."""
    from .. import _ops
    from .._introspection import finfo

    eps = finfo(probs.dtype).eps
    return _ops.clamp(probs, eps, 1 - eps)
