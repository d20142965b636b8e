"""The one-cycle policy (Smith & Topin, "Super-Convergence"), as PyTorch's ``OneCycleLR``."""

from __future__ import annotations

import math
from typing import Any

from ..errors import HyperparameterError
from ..optimizer import Optimizer
from .base import SCHEDULERS, LRScheduler, check_optimizer, per_group


@SCHEDULERS.register("one_cycle")
class OneCycleLR(LRScheduler):
    """Warm the learning rate up from ``max_lr / div_factor`` to ``max_lr``, then anneal it to
    ``max_lr / (div_factor * final_div_factor)``; the momentum (or Adam's ``beta1``) moves the
    opposite way between ``max_momentum`` and ``base_momentum``. Not chainable: it sets the
    rate from the cycle alone, stepping once per batch for ``total_steps`` steps.

    Args:
        optimizer: the optimizer.
        max_lr: the peak learning rate (one per group, or one for all).
        total_steps: the length of the cycle; or give ``epochs`` and ``steps_per_epoch``.
        epochs: the number of epochs (with ``steps_per_epoch``).
        steps_per_epoch: the steps in an epoch (with ``epochs``).
        pct_start: the fraction of the cycle spent increasing the rate.
        anneal_strategy: ``"cos"`` or ``"linear"``.
        cycle_momentum: cycle the momentum (or ``beta1``) too.
        base_momentum: the lowest momentum (at the peak rate).
        max_momentum: the highest momentum (at the ends).
        div_factor: ``initial_lr = max_lr / div_factor``.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``.
        three_phase: a third phase that anneals from ``initial_lr`` to ``min_lr`` (fast.ai's
            schedule has two).
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | list[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | list[float] = 0.85,
                 max_momentum: float | list[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        check_optimizer(optimizer, "OneCycleLR")
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise HyperparameterError(f"pct_start must be a float in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise HyperparameterError(
                f"anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}"
            )
        self.anneal_strategy = anneal_strategy
        up = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1
        self._schedule_phases = (
            [_phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
             _phase(float(2 * pct_start * self.total_steps) - 2, "max_lr", "initial_lr",
                    "base_momentum", "max_momentum"),
             _phase(last, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
            if three_phase else
            [_phase(up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
             _phase(last, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        )
        if last_epoch == -1:
            for peak, group in zip(per_group("max_lr", max_lr, optimizer), optimizer.param_groups):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise HyperparameterError(
                    f"cycle_momentum=True needs an optimizer with momentum or betas; "
                    f"{type(optimizer).__name__} has neither (pass cycle_momentum=False)"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                highs = per_group("max_momentum", max_momentum, optimizer)
                lows = per_group("base_momentum", base_momentum, optimizer)
                for high, low, group in zip(highs, lows, optimizer.param_groups):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group: dict[str, Any], value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        step = self.last_epoch
        if step > self.total_steps:
            raise HyperparameterError(
                f"OneCycleLR was stepped {step} times, past its total_steps={self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct))
                    break
                start = end
        return lrs


def _phase(end_step: float, start_lr: str, end_lr: str, start_momentum: str,
           end_momentum: str) -> dict[str, Any]:
    return {"end_step": end_step, "start_lr": start_lr, "end_lr": end_lr,
            "start_momentum": start_momentum, "end_momentum": end_momentum}


def _total_steps(total_steps: int | None, epochs: int | None,
                 steps_per_epoch: int | None) -> int:
    def positive(name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise HyperparameterError(f"{name} must be a positive integer, got {value!r}")
        return value

    if total_steps is not None:
        return positive("total_steps", total_steps)
    if epochs is not None and steps_per_epoch is not None:
        return positive("epochs", epochs) * positive("steps_per_epoch", steps_per_epoch)
    raise HyperparameterError("OneCycleLR needs total_steps, or epochs and steps_per_epoch")
