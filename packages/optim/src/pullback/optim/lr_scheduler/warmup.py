"""``warmup_cosine``: linear warmup, then cosine decay to a floor, then the floor."""

from __future__ import annotations

import math

from ..errors import HyperparameterError
from ..optimizer import Optimizer
from .base import check_optimizer
from .decay import LambdaLR


class WarmupCosine:
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

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps
        if step >= self.total_steps:
            return self.floor
        progress = (step - self.warmup_steps) / (self.total_steps - self.warmup_steps)
        return self.floor + (1.0 - self.floor) * (1.0 + math.cos(math.pi * progress)) / 2.0


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
    if isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int) or warmup_steps < 0:
        raise HyperparameterError(f"warmup_steps must be an integer >= 0, got {warmup_steps!r}")
    if (isinstance(total_steps, bool) or not isinstance(total_steps, int)
            or total_steps <= warmup_steps):
        raise HyperparameterError(
            f"total_steps must be an integer > warmup_steps={warmup_steps}, got {total_steps!r}"
        )
    if not min_lr >= 0:
        raise HyperparameterError(f"min_lr must be >= 0, got {min_lr!r}")
    factors = []
    for group in optimizer.param_groups:
        base = group.get("initial_lr", group["lr"])
        factors.append(WarmupCosine(warmup_steps, total_steps, min_lr / base if base else 0.0))
    return LambdaLR(optimizer, factors)
