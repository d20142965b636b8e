"""Dropout, with masks drawn from the device's seeded generator (``pullback.manual_seed``):
elementwise (``dropout``), whole channels (``dropout1d``/``2d``/``3d``) and the SELU-preserving
alpha dropout (``alpha_dropout``, ``feature_alpha_dropout``). ``inplace`` is accepted and
computes a new tensor."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pullback
from pullback.errors import ShapeError
from pullback.tensor import Tensor

from .activation import SELU_ALPHA, SELU_SCALE

# SELU's negative saturation value, what alpha dropout sets dropped units to.
_ALPHA_PRIME = SELU_ALPHA * SELU_SCALE


def keep_mask(shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """A tensor of ``1/(1-p)`` (kept, with probability ``1-p``) and ``0`` (dropped)."""
    return _kept(shape, p, like) * (1.0 / (1.0 - p))


def _kept(shape: tuple[int, ...], p: float, like: Tensor) -> Tensor:
    """1 (kept, with probability ``1 - p``) or 0, in ``like``'s dtype."""
    u = pullback.rand(*shape, dtype="float32", device=like.device)
    # Ops, not array code: under vmap(randomness="different") u holds one draw per sample.
    return (u >= p).to(like.dtype)


def check_p(where: str, p: Any) -> float:
    """``p`` as a float in [0, 1]."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{where}: dropout probability must be in [0, 1], got {p}")
    return p


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (identity
    when not ``training`` or ``p == 0``)."""
    p = check_p("dropout", p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return input * keep_mask(tuple(input.shape), p, input)


def _channel_shape(where: str, input: Tensor, batched_ndim: int) -> tuple[int, ...]:
    """The mask shape that drops whole channels of (N, C, *spatial), or of (C, *spatial) for
    an input with one axis fewer."""
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        raise ShapeError(f"{where}: expected a {batched_ndim - 1}-d or {batched_ndim}-d input, "
                         f"got shape {tuple(input.shape)}")
    lead = 2 if input.ndim == batched_ndim else 1
    return tuple(input.shape[:lead]) + (1,) * (input.ndim - lead)


def _channel_dropout(where: str, input: Tensor, p: float, training: bool,
                     batched_ndim: int) -> Tensor:
    p = check_p(where, p)
    shape = _channel_shape(where, input, batched_ndim)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return input * keep_mask(shape, p, input)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p``, scaling the rest."""
    return _channel_dropout("dropout1d", input, p, training, 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) with probability ``p``, scaling the rest.

    Other inputs are taken as PyTorch takes them, with its warnings: a 3-d input as (N, C, L)
    (channel-wise 1-d dropout), a 2-d one as (N, C) (each element its own channel).
    """
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", UserWarning, stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", UserWarning,
                      stacklevel=2)
    return _feature_dropout("dropout2d", input, p, training)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p``; other
    inputs are taken as unbatched, with PyTorch's warning."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", UserWarning, stacklevel=2)
    if input.ndim == 5 or not training or check_p("dropout3d", p) == 0.0:
        return _feature_dropout("dropout3d", input, p, training)
    return _feature_dropout("dropout3d", input.unsqueeze(0), p, training).squeeze(0)


def _feature_dropout(where: str, input: Tensor, p: float, training: bool) -> Tensor:
    """PyTorch's feature dropout: one draw per (axis 0, axis 1) pair, shared along the rest."""
    p = check_p(where, p)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise ShapeError(f"{where}: Feature dropout requires at least 2 dimensions in the "
                         f"input, got shape {tuple(input.shape)}")
    if p == 1.0:
        return input * 0.0
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return input * keep_mask(shape, p, input)


def _alpha(input: Tensor, p: float, training: bool, mask_shape: tuple[int, ...]) -> Tensor:
    """Alpha dropout: dropped units become SELU's saturation value, then an affine map keeps
    a standard normal input's mean and variance (PyTorch's constants)."""
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    a = 1.0 / math.sqrt((_ALPHA_PRIME ** 2 * p + 1) * (1 - p))
    kept = _kept(mask_shape, p, input)
    return input * (kept * a) + (kept - 1) * (_ALPHA_PRIME * a) + _ALPHA_PRIME * a * p


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Alpha dropout of each element (for SELU networks): mean and variance preserved."""
    return _alpha(input, check_p("alpha_dropout", p), training, tuple(input.shape))


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels of (N, C, *)."""
    p = check_p("feature_alpha_dropout", p)
    if input.ndim < 2:
        raise ShapeError(f"feature_alpha_dropout: expected at least a 2-d input, got shape "
                         f"{tuple(input.shape)}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha(input, p, training, shape)
