"""The scheduler base class and the registry of schedulers (PyTorch's ``LRScheduler``).

A scheduler sets ``group["lr"]`` in its optimizer's param groups once per ``step()``. Chainable
schedulers compute the next rate from the current ``group["lr"]``, so several schedulers may
step one optimizer and their effects compose, as in PyTorch. The state of a scheduler is its
attributes (numbers, lists, strings: JSON), so it is saved with :func:`pullback.save`.
"""

from __future__ import annotations

import warnings
from typing import Any

from pullback.errors import CheckpointError

from .._registry import Registry
from ..errors import HyperparameterError, OptimizerTypeError, ParamGroupError
from ..optimizer import Optimizer

SCHEDULERS = Registry("scheduler")
"""Scheduler classes by name (``SCHEDULERS["cosine_annealing"] is CosineAnnealingLR``)."""


def check_optimizer(optimizer: Any, who: str) -> Optimizer:
    """``optimizer``, or an :class:`OptimizerTypeError` naming what it is instead."""
    if not isinstance(optimizer, Optimizer):
        raise OptimizerTypeError(
            f"{who} needs a pullback.optim Optimizer, got {type(optimizer).__name__}"
        )
    return optimizer


def per_group(name: str, value: Any, optimizer: Optimizer) -> list[Any]:
    """``value`` for each param group: a list of the right length, or one value repeated."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise HyperparameterError(
                f"{name} has {len(value)} values but the optimizer has {n} param groups"
            )
        return list(value)
    return [value] * n


class LRScheduler:
    """Base class of learning-rate schedulers (mirrors ``torch.optim.lr_scheduler.LRScheduler``).

    Subclasses implement :meth:`get_lr` (the rates at ``last_epoch``, usually from the current
    ``group["lr"]``) and, where a closed form exists, :meth:`_closed_form_lr` (from
    ``base_lrs``), which :class:`SequentialLR` uses to restart a scheduler at a milestone.

    Args:
        optimizer: the optimizer whose learning rates to set.
        last_epoch: the index of the last step taken; ``-1`` starts a new schedule (and
            records each group's ``lr`` as its ``initial_lr``).

    Attributes:
        base_lrs: each group's ``initial_lr``.
        last_epoch: the number of ``step()`` calls since the start (0 after construction).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        self.optimizer = check_optimizer(optimizer, type(self).__name__)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise ParamGroupError(
                        f"param group {i} has no 'initial_lr', which resuming a schedule at "
                        f"last_epoch={last_epoch} needs: load the optimizer's state dict first, "
                        "or start with last_epoch=-1 and load the scheduler's state dict"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Take the step that sets the first rates (``last_epoch`` becomes 0)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The learning rate of each param group at ``last_epoch`` (called by :meth:`step`)."""
        raise NotImplementedError

    def _closed_form_lr(self) -> list[float]:
        """The rates at ``last_epoch`` from ``base_lrs`` alone (default: :meth:`get_lr`)."""
        return self.get_lr()

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last step, one per param group."""
        return list(self._last_lr)

    def step(self) -> None:
        """Advance the schedule by one step; call it after ``optimizer.step()`` (before it, the
        first rate of the schedule is skipped, and PyTorch's warning says so)."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", True):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                          "In PyTorch 1.1.0 and later, you should call them in the opposite "
                          "order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to "
                          "do this will result in PyTorch skipping the first value of the "
                          "learning rate schedule.", UserWarning, stacklevel=2)
        self._step_count += 1
        self._update_lr()

    def _update_lr(self, epoch: int | None = None) -> None:
        """Set the rates for the next step, or for step ``epoch`` from the closed form."""
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._closed_form_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current_lrs(self) -> list[float]:
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's attributes except the optimizer (JSON values)."""
        return {k: _copy(v) for k, v in vars(self).items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` of a scheduler of the same kind.

        Raises:
            CheckpointError: the keys are not this scheduler's (another kind of scheduler).
        """
        check_keys(self, state_dict, {k for k in vars(self) if k != "optimizer"})
        self.__dict__.update({k: _copy(v) for k, v in state_dict.items()})


def check_keys(scheduler: Any, state_dict: Any, expected: set[str]) -> None:
    """Raise :class:`CheckpointError` unless ``state_dict`` has exactly the ``expected`` keys."""
    name = type(scheduler).__name__
    if not isinstance(state_dict, dict):
        raise CheckpointError(f"{name}.load_state_dict: expected a dict, got "
                              f"{type(state_dict).__name__}")
    missing, unexpected = expected - state_dict.keys(), state_dict.keys() - expected
    if missing or unexpected:
        raise CheckpointError(
            f"{name}.load_state_dict: the state dict does not fit a {name} (missing keys: "
            f"{sorted(missing)}, unexpected keys: {sorted(unexpected)})"
        )


def _copy(value: Any) -> Any:
    """A copy of nested lists and dicts, so that a state dict never aliases live state."""
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value
