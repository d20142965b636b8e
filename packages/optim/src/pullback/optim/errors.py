"""Errors raised by pullback.optim. Each message names the value that was wrong."""

from __future__ import annotations

from pullback.errors import PullbackError


class OptimizerError(PullbackError):
    """Base class of the errors below."""


class HyperparameterError(OptimizerError, ValueError):
    """An optimizer or scheduler setting out of range (a negative lr, betas outside [0, 1))."""


class ParamGroupError(OptimizerError, ValueError):
    """A parameter list that cannot be optimized: empty, a tensor listed twice, a non-leaf."""


class OptimizerTypeError(OptimizerError, TypeError):
    """An argument of the wrong type: a parameter that is not a floating point Tensor, a
    scheduler given something that is not an Optimizer."""


class NonFiniteNormError(OptimizerError, RuntimeError):
    """``clip_grad_norm_(..., error_if_nonfinite=True)`` met a NaN or infinite total norm."""
