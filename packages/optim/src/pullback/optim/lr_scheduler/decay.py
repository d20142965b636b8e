"""Schedulers that follow a formula of the step: lambda, step, multi-step, exponential,
linear and cosine annealing (PyTorch's definitions, recursive where PyTorch's are, so that they
chain the same way)."""

from __future__ import annotations

import math
import types
from bisect import bisect_right
from typing import Any, Callable, Iterable, Sequence

from pullback.errors import CheckpointError

from ..errors import HyperparameterError
from ..optimizer import Optimizer
from .base import SCHEDULERS, LRScheduler, check_keys, check_like, check_optimizer, per_group


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HyperparameterError(f"{name} must be a positive integer, got {value!r}")
    return value


@SCHEDULERS.register("lambda")
class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(step)``.

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the step giving the factor, or one such function per group.
        last_epoch: see :class:`LRScheduler`.

    The functions themselves are not saved by :meth:`state_dict` (a plain function is code, not
    state); a callable *object*'s ``__dict__`` is (it must hold JSON values), as in PyTorch.
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float]
                 | Sequence[Callable[[int], float]], last_epoch: int = -1) -> None:
        self.lr_lambdas = per_group("lr_lambda", lr_lambda,
                                    check_optimizer(optimizer, "LambdaLR"))
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise HyperparameterError(f"lr_lambda must be callable, got {fn!r}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(vars(fn))
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        check_keys(self, state_dict, {k for k in vars(self) if k != "optimizer"})
        lambdas = state_dict["lr_lambdas"]
        for i, (fn, saved) in enumerate(zip(self.lr_lambdas, lambdas)):
            current = None if isinstance(fn, types.FunctionType) else dict(vars(fn))
            where = f"LambdaLR.load_state_dict: 'lr_lambdas'[{i}]"
            if current is None and saved is not None:
                raise CheckpointError(f"{where} holds a state, but this scheduler's function "
                                      "keeps none")
            if saved is not None:
                check_like(saved, current, where)
        super().load_state_dict({**state_dict, "lr_lambdas": self.lr_lambdas})
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                vars(fn).update(saved)


@SCHEDULERS.register("step")
class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` steps.

    Args:
        optimizer: the optimizer.
        step_size: the period, in steps.
        gamma: the factor.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = _positive_int("step_size", step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


@SCHEDULERS.register("multi_step")
class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone (twice at a milestone listed
    twice).

    Args:
        optimizer: the optimizer.
        milestones: the steps at which to decay.
        gamma: the factor.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        hits = self.milestones.count(self.last_epoch)
        if hits == 0:
            return self._current_lrs()
        return [lr * self.gamma**hits for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        passed = bisect_right(self.milestones, self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]


@SCHEDULERS.register("exponential")
class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every step.

    Args:
        optimizer: the optimizer.
        gamma: the factor.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


@SCHEDULERS.register("linear")
class LinearLR(LRScheduler):
    """Scale the learning rate by a factor going linearly from ``start_factor`` to
    ``end_factor`` over ``total_iters`` steps, then constant.

    Args:
        optimizer: the optimizer.
        start_factor: the factor at step 0, in (0, 1].
        end_factor: the factor from step ``total_iters`` on, in [0, 1].
        total_iters: the number of steps of the ramp.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < start_factor <= 1:
            raise HyperparameterError(f"start_factor must be in (0, 1], got {start_factor!r}")
        if not 0 <= end_factor <= 1:
            raise HyperparameterError(f"end_factor must be in [0, 1], got {end_factor!r}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        span = self.end_factor - self.start_factor
        factor = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return [lr * factor for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        done = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * done)
                for base in self.base_lrs]


@SCHEDULERS.register("cosine_annealing")
class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_max`` steps (then back up,
    periodically, as in PyTorch; see :func:`warmup_cosine` for a schedule that stays at its
    floor)::

        lr_t = eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2

    Args:
        optimizer: the optimizer.
        T_max: the number of steps of a half period.
        eta_min: the lowest learning rate.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        self.T_max = _positive_int("T_max", T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        t, T, low = self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and t > 0:  # resumed with last_epoch > 0: closed form
            return self._closed_form_lr()
        if (t - 1 - T) % (2 * T) == 0:  # at the trough of a period: the recursion's 0/0
            return [lr + (base - low) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, self._current_lrs())]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - low) + low for lr in self._current_lrs()]

    def _closed_form_lr(self) -> list[float]:
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]
