"""Schedulers made of schedulers: one after another (``SequentialLR``) or all at once
(``ChainedScheduler``), as in PyTorch."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, Sequence

from ..errors import HyperparameterError
from ..optimizer import Optimizer
from .base import SCHEDULERS, LRScheduler, check_keys, check_optimizer
from .plateau import ReduceLROnPlateau


def _check_parts(kind: str, schedulers: Sequence[LRScheduler], optimizer: Optimizer) -> None:
    if len(schedulers) < 1:
        raise HyperparameterError(f"{kind} needs at least one scheduler, got none")
    for i, scheduler in enumerate(schedulers):
        if not isinstance(scheduler, LRScheduler):
            raise HyperparameterError(
                f"{kind}: schedulers[{i}] is {type(scheduler).__name__}, not a scheduler"
            )
        if isinstance(scheduler, ReduceLROnPlateau):
            raise HyperparameterError(
                f"{kind}: schedulers[{i}] is a ReduceLROnPlateau, whose step needs a metric; "
                "step it yourself instead"
            )
        if scheduler.optimizer is not optimizer:
            raise HyperparameterError(
                f"{kind}: schedulers[{i}] ({type(scheduler).__name__}) drives another optimizer; "
                "all must drive the same one"
            )


class _Composite(LRScheduler):
    """The state dict of a composite holds its parts' state dicts."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in super().state_dict().items() if k != "_schedulers"}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        check_keys(self, state_dict, {k for k in vars(self) if k != "optimizer"})
        parts = state_dict["_schedulers"]
        if len(parts) != len(self._schedulers):
            raise HyperparameterError(
                f"{type(self).__name__}.load_state_dict: the state dict has {len(parts)} "
                f"schedulers, this one {len(self._schedulers)}"
            )
        self.__dict__.update({k: v for k, v in state_dict.items() if k != "_schedulers"})
        for scheduler, part in zip(self._schedulers, parts):
            scheduler.load_state_dict(part)


@SCHEDULERS.register("sequential")
class SequentialLR(_Composite):
    """Run ``schedulers[0]`` until ``milestones[0]``, then ``schedulers[1]`` (restarted from its
    initial rate) until ``milestones[1]``, and so on.

    Args:
        optimizer: the optimizer all the schedulers drive.
        schedulers: the schedulers, in order (already built on ``optimizer``).
        milestones: the steps at which to switch (one fewer than the schedulers).
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1) -> None:
        check_optimizer(optimizer, "SequentialLR")
        _check_parts("SequentialLR", schedulers, optimizer)
        if len(milestones) != len(schedulers) - 1:
            raise HyperparameterError(
                f"SequentialLR needs one milestone fewer than schedulers, got "
                f"{len(milestones)} milestones for {len(schedulers)} schedulers"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # building the parts stepped them once each; start again from the first one
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for scheduler in self._schedulers:
            _undo_step(scheduler)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


def _undo_step(scheduler: LRScheduler) -> None:
    if isinstance(scheduler, _Composite):
        for part in scheduler._schedulers:
            _undo_step(part)
    else:
        scheduler.last_epoch -= 1


@SCHEDULERS.register("chained")
class ChainedScheduler(_Composite):
    """Step every scheduler at each step, so that their effects compose (e.g. a warmup and a
    decay both scaling the current rate).

    Args:
        schedulers: the chainable schedulers (already built on one optimizer).
        optimizer: that optimizer (default: the first scheduler's).
    """

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if optimizer is None and schedulers:
            optimizer = getattr(schedulers[0], "optimizer", None)
        self.optimizer = check_optimizer(optimizer, "ChainedScheduler")
        _check_parts("ChainedScheduler", schedulers, self.optimizer)
        self._schedulers = list(schedulers)
        self._last_lr = self._current_lrs()

    def step(self) -> None:
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()
