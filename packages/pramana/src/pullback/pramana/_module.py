"""The base class of pramana's layers."""

from __future__ import annotations

from pullback import nn


class DistributionalModule(nn.Module):
    """A layer whose forward takes a :class:`DistributionalTensor` (or a Tensor, read as a point
    mass) and returns one. :func:`pullback.pramana.propagate` calls such layers as they are."""
