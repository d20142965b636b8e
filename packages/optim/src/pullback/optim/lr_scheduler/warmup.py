"""Transformer schedules with a linear warmup: ``warmup_cosine`` (cosine decay to a floor) and
``warmup_stable_decay`` (hold the peak, then a short decay to the floor at the end)."""

from __future__ import annotations

import math
from typing import Callable

from ..errors import HyperparameterError
from ..optimizer import Optimizer
from .base import check_optimizer
from .decay import LambdaLR


# The decay phase's shape: the fraction of (peak - floor) left at progress p in [0, 1].
DECAY_SHAPES: dict[str, Callable[[float], float]] = {
    "linear": lambda p: 1.0 - p,
    "cosine": lambda p: (1.0 + math.cos(math.pi * p)) / 2.0,
    "1-sqrt": lambda p: 1.0 - math.sqrt(p),
}


class _WarmupThenDecay:
    """The shared piecewise factor: the linear ramp ``(t + 1) / warmup_steps`` (the first step
    already trains), the peak 1 until the decay starts, the decay's shape down to ``floor`` at
    ``total_steps``, then ``floor``. Subclasses say where the decay starts and its shape."""

    warmup_steps: int
    total_steps: int
    floor: float

    def _decay_start(self) -> int:
        raise NotImplementedError

    def _remaining(self, progress: float) -> float:
        raise NotImplementedError

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if step >= self.total_steps:
            return self.floor
        start = self._decay_start()
        if step < start:
            return 1.0
        progress = (step - start) / (self.total_steps - start)
        return self.floor + (1.0 - self.floor) * self._remaining(progress)


class WarmupCosine(_WarmupThenDecay):
    """The learning-rate factor of step ``t`` (a callable for :class:`LambdaLR`)::

        (t + 1) / warmup_steps                                        t < warmup_steps
        floor + (1 - floor) * (1 + cos(pi * (t - warmup_steps)
                                       / (total_steps - warmup_steps))) / 2
                                                                     up to total_steps
        floor                                                        after

    Its attributes are plain numbers, so a :class:`LambdaLR` saves them in its state dict.
    """

    def __init__(self, warmup_steps: int, total_steps: int, floor: float = 0.0) -> None:
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.floor = floor

    def _decay_start(self) -> int:
        return self.warmup_steps

    def _remaining(self, progress: float) -> float:
        return DECAY_SHAPES["cosine"](progress)


class WarmupStableDecay(_WarmupThenDecay):
    """The learning-rate factor of step ``t`` (a callable for :class:`LambdaLR`)::

        (t + 1) / warmup_steps                                  t < warmup_steps
        1                                                       t < total_steps - decay_steps
        floor + (1 - floor) * shape((t - total_steps + decay_steps) / decay_steps)
                                                                up to total_steps
        floor                                                   after

    with ``shape`` one of :data:`DECAY_SHAPES`. Its attributes are plain values, so a
    :class:`LambdaLR` saves them in its state dict.
    """

    def __init__(self, warmup_steps: int, total_steps: int, decay_steps: int,
                 floor: float = 0.0, shape: str = "linear") -> None:
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.decay_steps = decay_steps
        self.floor = floor
        self.shape = shape

    def _decay_start(self) -> int:
        return self.total_steps - self.decay_steps

    def _remaining(self, progress: float) -> float:
        return DECAY_SHAPES[self.shape](progress)


def _check_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise HyperparameterError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_warmup_and_floor(warmup_steps: int, total_steps: int, min_lr: float) -> None:
    _check_int("warmup_steps", warmup_steps, 0)
    if (isinstance(total_steps, bool) or not isinstance(total_steps, int)
            or total_steps <= warmup_steps):
        raise HyperparameterError(
            f"total_steps must be an integer > warmup_steps={warmup_steps}, got {total_steps!r}"
        )
    if not min_lr >= 0:
        raise HyperparameterError(f"min_lr must be >= 0, got {min_lr!r}")


def _floors(optimizer: Optimizer, min_lr: float) -> list[float]:
    """``min_lr`` as a factor of each group's initial rate (0 for a group whose rate is 0)."""
    bases = [group.get("initial_lr", group["lr"]) for group in optimizer.param_groups]
    return [min_lr / base if base else 0.0 for base in bases]


def warmup_cosine(optimizer: Optimizer, warmup_steps: int, total_steps: int,
                  min_lr: float = 0.0) -> LambdaLR:
    """A :class:`LambdaLR` that ramps each group's learning rate linearly from
    ``lr / warmup_steps`` up to ``lr`` over the first ``warmup_steps`` steps, then decays it
    along a cosine to ``min_lr`` at step ``total_steps``, and holds it there.

    Up to ``total_steps`` this is PyTorch's ``SequentialLR([LinearLR(start_factor=1 /
    warmup_steps, total_iters=warmup_steps - 1), CosineAnnealingLR(T_max=total_steps -
    warmup_steps, eta_min=min_lr)], milestones=[warmup_steps])``; after it, the rate stays at
    ``min_lr`` where ``CosineAnnealingLR`` would rise again. A group whose ``lr`` is 0 stays 0.

    Args:
        optimizer: the optimizer.
        warmup_steps: the length of the warmup (0 for none).
        total_steps: the step at which the rate reaches ``min_lr``.
        min_lr: the floor (an absolute learning rate, like ``eta_min``).

    Example:
        >>> import pullback, pullback.optim
        >>> w = pullback.zeros(2, requires_grad=True)
        >>> opt = pullback.optim.AdamW([w], lr=1.0)
        >>> sched = pullback.optim.lr_scheduler.warmup_cosine(opt, 2, 4, min_lr=0.1)
        >>> lrs = []
        >>> for _ in range(6):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.5, 1.0, 1.0, 0.55, 0.1, 0.1]
    """
    check_optimizer(optimizer, "warmup_cosine")
    _check_warmup_and_floor(warmup_steps, total_steps, min_lr)
    return LambdaLR(optimizer, [WarmupCosine(warmup_steps, total_steps, floor)
                                for floor in _floors(optimizer, min_lr)])


def warmup_stable_decay(optimizer: Optimizer, warmup_steps: int, total_steps: int,
                        decay_steps: int, min_lr: float = 0.0,
                        shape: str = "linear") -> LambdaLR:
    """A :class:`LambdaLR` for the warmup-stable-decay ("WSD", trapezoidal) schedule: a linear
    warmup from ``lr / warmup_steps`` to ``lr``, the peak ``lr`` held until
    ``total_steps - decay_steps``, then a decay to ``min_lr`` at ``total_steps``, held after.

    Holding the peak trains faster than a cosine in short runs, and the last decay recovers
    what the high rate leaves on the table (Hu et al. 2024, MiniCPM; Hägele et al. 2024 find a
    cooldown of 10-20 % of the run matches or beats cosine). A run can also be extended from a
    checkpoint taken before the decay. A group whose ``lr`` is 0 stays 0.

    Args:
        optimizer: the optimizer.
        warmup_steps: the length of the warmup (0 for none).
        total_steps: the step at which the rate reaches ``min_lr``.
        decay_steps: the length of the decay, at most ``total_steps - warmup_steps``.
        min_lr: the floor (an absolute learning rate).
        shape: the decay's shape: ``"linear"``, ``"cosine"`` or ``"1-sqrt"``
            (``1 - sqrt(progress)``, Hägele et al.'s best).

    Example:
        >>> import pullback, pullback.optim
        >>> w = pullback.zeros(2, requires_grad=True)
        >>> opt = pullback.optim.AdamW([w], lr=1.0)
        >>> sched = pullback.optim.lr_scheduler.warmup_stable_decay(opt, 2, 8, 4, min_lr=0.2)
        >>> lrs = []
        >>> for _ in range(10):
        ...     lrs.append(round(sched.get_last_lr()[0], 4))
        ...     opt.step()
        ...     sched.step()
        >>> lrs
        [0.5, 1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2, 0.2]
    """
    check_optimizer(optimizer, "warmup_stable_decay")
    _check_warmup_and_floor(warmup_steps, total_steps, min_lr)
    _check_int("decay_steps", decay_steps, 1)
    if decay_steps > total_steps - warmup_steps:
        raise HyperparameterError(
            f"decay_steps ({decay_steps}) must be at most total_steps - warmup_steps "
            f"({total_steps} - {warmup_steps})"
        )
    if shape not in DECAY_SHAPES:
        raise HyperparameterError(f"shape must be one of {sorted(DECAY_SHAPES)}, got {shape!r}")
    return LambdaLR(optimizer, [WarmupStableDecay(warmup_steps, total_steps, decay_steps, floor,
                                                  shape)
                                for floor in _floors(optimizer, min_lr)])
