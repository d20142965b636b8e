"""Reduce the learning rate when a metric stops improving (PyTorch's ``ReduceLROnPlateau``)."""

from __future__ import annotations

import math
from typing import SupportsFloat

from ..errors import HyperparameterError
from ..optimizer import Optimizer
from .base import SCHEDULERS, LRScheduler, check_optimizer, per_group


@SCHEDULERS.register("reduce_on_plateau")
class ReduceLROnPlateau(LRScheduler):
    """Multiply the learning rate by ``factor`` once the metric passed to ``step(metric)`` has
    not improved for ``patience`` steps; then wait ``cooldown`` steps before counting again.

    Args:
        optimizer: the optimizer.
        mode: ``"min"`` (lower is better, e.g. a loss) or ``"max"`` (e.g. an accuracy).
        factor: the factor, < 1.
        patience: the number of steps without improvement to tolerate.
        threshold: how much better counts as an improvement.
        threshold_mode: ``"rel"`` (better than ``best * (1 -/+ threshold)``) or ``"abs"``
            (better than ``best -/+ threshold``).
        cooldown: steps to wait after a reduction before counting bad steps again.
        min_lr: the lowest learning rate (one per group, or one for all).
        eps: a reduction smaller than this is skipped.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1,
                 patience: int = 10, threshold: float = 1e-4, threshold_mode: str = "rel",
                 cooldown: int = 0, min_lr: float | list[float] = 0.0,
                 eps: float = 1e-8) -> None:
        self.optimizer = check_optimizer(optimizer, "ReduceLROnPlateau")
        if not factor < 1.0:
            raise HyperparameterError(f"factor must be < 1.0, got {factor!r}")
        if mode not in ("min", "max"):
            raise HyperparameterError(f"mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise HyperparameterError(
                f"threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}"
            )
        self.factor = factor
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.min_lrs = per_group("min_lr", min_lr, optimizer)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self.best = self._worst()
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _worst(self) -> float:
        return math.inf if self.mode == "min" else -math.inf

    def step(self, metrics: SupportsFloat) -> None:  # type: ignore[override]
        """Record the metric of this step, and reduce the learning rate if it has plateaued."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):  # a param group was added since
            if self.default_min_lr is None:
                raise HyperparameterError(
                    f"the optimizer now has {len(groups)} param groups but min_lr lists "
                    f"{len(self.min_lrs)}; set this scheduler's min_lrs to one per group"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                group["lr"] = new

    def _is_better(self, value: float) -> bool:
        best, threshold = self.best, self.threshold
        if self.mode == "min":
            return value < (best * (1.0 - threshold) if self.threshold_mode == "rel"
                            else best - threshold)
        return value > (best * (threshold + 1.0) if self.threshold_mode == "rel"
                        else best + threshold)
