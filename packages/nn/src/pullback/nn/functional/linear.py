"""Linear maps: ``linear`` (the fused ``nn.linear`` op) and ``bilinear``."""

from __future__ import annotations

from typing import Any

import pullback
from pullback.dispatch import apply
from pullback.errors import ShapeError
from pullback.tensor import Tensor

from .._ops.linear import LINEAR


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` for inputs of shape (..., in_features)."""
    x_shape, w_shape = input.shape, weight.shape
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[1]:
        raise ShapeError(
            f"linear: input of shape {tuple(x_shape)} does not fit weight of shape "
            f"{tuple(w_shape)} (expected (..., {w_shape[-1] if w_shape else '?'}))"
        )
    if bias is not None and bias.shape != w_shape[:1]:
        raise ShapeError(f"linear: bias of shape {tuple(bias.shape)} does not fit weight "
                         f"{tuple(w_shape)}")
    return apply(LINEAR, input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Any:
    """``y[..., o] = x1[..., i] W[o, i, j] x2[..., j] + b[o]``."""
    if (weight.ndim != 3 or input1.shape[-1] != weight.shape[1]
            or input2.shape[-1] != weight.shape[2] or input1.shape[:-1] != input2.shape[:-1]):
        raise ShapeError(
            f"bilinear: inputs {tuple(input1.shape)} and {tuple(input2.shape)} do not fit weight "
            f"{tuple(weight.shape)}"
        )
    out = pullback.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out + bias if bias is not None else out
