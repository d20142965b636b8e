"""Dropout layers: active in training mode only (masks from the device's seeded generator)."""

from __future__ import annotations

from typing import Any

from pullback.tensor import Tensor

from .. import functional as F
from ..functional.dropout import check_p
from ..module import Module


class _DropoutNd(Module):
    _function: Any = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        self.p = check_p(type(self).__name__, p)
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._function(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` in training (scaling the rest by 1/(1-p));
    the identity in evaluation."""

    _function = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) in training."""

    _function = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) in training."""

    _function = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) in training."""

    _function = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Alpha dropout (SELU networks): dropped units saturate, mean and variance are kept."""

    _function = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    _function = staticmethod(F.feature_alpha_dropout)
