"""Grad-mode switches (thread-local): no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a decorator, as in PyTorch.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, TypeVar

from ..dispatch import inference_threads, state

F = TypeVar("F", bound=Callable[..., Any])


def is_grad_enabled() -> bool:
    """Whether ops record a graph in this thread."""
    return state.grad_enabled


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside :class:`inference_mode`."""
    return state.inference


_COUNT_LOCK = threading.Lock()


def _count_inference_thread(change: int) -> None:
    """Keep dispatch's count of threads inside inference_mode (see dispatch.inference_threads)."""
    if change:
        with _COUNT_LOCK:
            inference_threads[0] += change


class _GradSwitch:
    """Sets grad mode on entry and restores the previous mode on exit."""

    _enabled = True
    _inference = False

    def __enter__(self) -> None:
        self._prev = (state.grad_enabled, state.inference)
        state.grad_enabled = self._enabled
        inference = self._inference or (self._prev[1] and not self._enabled)
        _count_inference_thread(int(inference) - int(self._prev[1]))
        state.inference = inference

    def __exit__(self, *exc: object) -> None:
        _count_inference_thread(int(self._prev[1]) - int(state.inference))
        state.grad_enabled, state.inference = self._prev

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__._fresh(self):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    @staticmethod
    def _fresh(switch: _GradSwitch) -> _GradSwitch:
        clone = object.__new__(type(switch))
        clone.__dict__.update(switch.__dict__)
        return clone


class no_grad(_GradSwitch):  # noqa: N801 - PyTorch's name
    """Ops inside record no graph (outputs do not require grad)."""

    _enabled = False


class enable_grad(_GradSwitch):  # noqa: N801
    """Turn graph recording back on inside a ``no_grad`` block."""

    _enabled = True


class set_grad_enabled(_GradSwitch):  # noqa: N801
    """Turn graph recording on or off (takes effect immediately, as in PyTorch)."""

    def __init__(self, mode: bool) -> None:
        self._enabled = bool(mode)
        self._prev = (state.grad_enabled, state.inference)
        state.grad_enabled = self._enabled

    def __enter__(self) -> None:
        pass  # already applied in __init__


class inference_mode(_GradSwitch):  # noqa: N801
    """Like ``no_grad``; tensors made inside are marked as inference tensors.

    Inference tensors cannot be saved for a later backward: using one together with a tensor
    that requires grad raises (as in PyTorch), instead of giving wrong gradients.
    """

    def __init__(self, mode: bool = True) -> None:
        self._enabled = not mode
        self._inference = bool(mode)
