"""Argument checks shared by the neurons, the functional API and the layers: each error names
the function or class, the offending value and what was expected."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.errors import ShapeError
from pullback.tensor import Tensor

RESET_MECHANISMS = ("subtract", "zero", "none")


def _host(value: Any) -> np.ndarray:
    return np.asarray(value.detach().cpu().numpy() if isinstance(value, Tensor) else value,
                      dtype=np.float64)


def check_decay(where: str, name: str, value: Any) -> None:
    """A decay (beta, alpha) must lie in [0, 1] everywhere."""
    v = _host(value)
    if v.size and not (np.all(v >= 0.0) and np.all(v <= 1.0)):
        shown = float(v) if v.ndim == 0 else f"values in [{v.min():g}, {v.max():g}]"
        raise ValueError(f"{where}: {name} must be in [0, 1], got {shown}")


def check_threshold(where: str, value: Any) -> None:
    """A threshold must be positive (and finite) everywhere."""
    v = _host(value)
    if v.size and not (np.all(v > 0.0) and np.all(np.isfinite(v))):
        shown = float(v) if v.ndim == 0 else f"values in [{v.min():g}, {v.max():g}]"
        raise ValueError(f"{where}: threshold must be positive and finite, got {shown}")


def check_reset(where: str, reset_mechanism: Any) -> str:
    """One of ``subtract``, ``zero``, ``none``."""
    if reset_mechanism not in RESET_MECHANISMS:
        raise ValueError(f"{where}: reset_mechanism must be one of "
                         f"{', '.join(repr(r) for r in RESET_MECHANISMS)}, got {reset_mechanism!r}")
    return reset_mechanism


def check_state(where: str, name: str, state: Any, step_shape: tuple[int, ...]) -> None:
    """A state tensor must broadcast to one time step of the input."""
    if state is None or isinstance(state, (int, float)):
        return
    shape = tuple(state.shape)
    if shape == step_shape:
        return
    try:
        broadcast = np.broadcast_shapes(shape, step_shape)
    except ValueError:
        broadcast = None
    if broadcast != step_shape:
        raise ShapeError(f"{where}: {name} of shape {shape} does not match the input's step "
                         f"shape {step_shape}")


def check_sequence(where: str, inputs: Any, num_steps: int | None = None) -> int:
    """A time-major input ``(T, ...)``; returns ``T`` (which must equal ``num_steps`` if given)."""
    if not isinstance(inputs, Tensor):
        raise TypeError(f"{where}: inputs must be a pullback Tensor, got {type(inputs).__name__}")
    if inputs.ndim < 1:
        raise ShapeError(f"{where}: inputs need a leading time axis (T, ...), got a scalar")
    steps = int(inputs.shape[0])
    if num_steps is not None:
        if not isinstance(num_steps, int) or isinstance(num_steps, bool) or num_steps < 1:
            raise ValueError(f"{where}: num_steps must be a positive int, got {num_steps!r}")
        if steps != num_steps:
            raise ShapeError(f"{where}: inputs have {steps} time steps (shape "
                             f"{tuple(inputs.shape)}, time first) but num_steps={num_steps}")
    return steps
