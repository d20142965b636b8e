"""Error norms of adaptive step-size control (torchdiffeq's): RMS over the state, the max of the
RMS of each part for tuple states and the adjoint's augmented state, or a user's function.

Norms take the internal (flat) array and return a Python float, so step control never builds
Tensors: an RMS is one dot product.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import pullback
from pullback import Tensor


def rms_norm(x: Any) -> float:
    """sqrt(mean(x**2)) over every element."""
    flat = x.reshape(-1)
    return math.sqrt(float(flat @ flat) / flat.size) if flat.size else 0.0


class SegmentRMS:
    """The largest RMS over consecutive segments of a flat vector (torchdiffeq's mixed norm).

    Args:
        bounds: ``(start, stop)`` of each segment, consecutive from 0; elements after the last
            stop are ignored (the adjoint's seminorm leaves out the parameters' segment).
    """

    def __init__(self, bounds: Sequence[tuple[int, int]], xp: Any) -> None:
        self.bounds, self.xp = list(bounds), xp
        self.starts = [a for a, _ in self.bounds]
        self.stop = self.bounds[-1][1] if self.bounds else 0
        self.sizes = [b - a for a, b in self.bounds]

    def __call__(self, x: Any) -> float:
        flat = x.reshape(-1)[: self.stop]
        if len(self.bounds) == 1:
            return rms_norm(flat)
        sums = self.xp.add.reduceat(flat * flat, self.starts)
        return math.sqrt(max(float(s) / n for s, n in zip(sums.tolist(), self.sizes) if n))


class UserNorm:
    """A user's ``norm`` option (it takes a Tensor, or a tuple of Tensors for tuple states, and
    returns a scalar) applied to internal arrays."""

    def __init__(self, norm: Callable[..., Any], device: Any,
                 split: Callable[[Any], Any] | None = None) -> None:
        self.norm, self.device, self.split = norm, device, split

    def __call__(self, x: Any) -> float:
        with pullback.no_grad():
            value = Tensor._wrap(x, self.device)
            result = self.norm(self.split(value) if self.split is not None else value)
        return float(result.item() if isinstance(result, Tensor) else result)


def error_ratio(norm: Callable[[Any], float], xp: Any, error: Any, y0: Any, y1: Any,
                rtol: Any, atol: Any) -> float:
    """norm(error / (atol + rtol * max(|y0|, |y1|))): at most 1 means the step is accepted."""
    tolerance = atol + rtol * xp.maximum(xp.abs(y0), xp.abs(y1))
    return abs(norm(error / tolerance))



def linf_norm(x: Any) -> float:
    """max |x| over every element."""
    return float(abs(x).max()) if x.size else 0.0
