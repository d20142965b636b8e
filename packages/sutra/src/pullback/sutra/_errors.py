"""The errors a solve raises on purpose (bad arguments raise ValueError, TypeError, ShapeError)."""

from __future__ import annotations

from pullback.errors import PullbackError


class SolverError(PullbackError, RuntimeError):
    """A solve that cannot go on: too many steps, or a step size that underflowed."""


class MaxStepsError(SolverError):
    """An adaptive solver took ``max_num_steps`` steps without reaching the last time."""


class NonFiniteError(SolverError, FloatingPointError):
    """``func`` returned NaN or Inf (the message names the time, the step and the stage)."""
