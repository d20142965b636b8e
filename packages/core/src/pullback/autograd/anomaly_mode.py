"""``torch.autograd.detect_anomaly`` and ``set_detect_anomaly`` under PyTorch's names and
semantics, over :mod:`pullback.debug`'s anomaly mode.

PyTorch's anomaly mode checks gradients only: a grad rule that returns NaN raises a
RuntimeError naming the op and the line of the forward call that created it (a NaN in the
forward is not an error). These do the same; :func:`pullback.debug.detect_anomaly` is the
stricter debugger (NaN and Inf, forward and backward).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..dispatch import state


def _active() -> Any:
    from ..debug.anomaly import AnomalyMode

    return next((m for m in state.modes if isinstance(m, AnomalyMode)), None)


def _switch(enabled: bool, check_nan: bool) -> None:
    from ..debug.anomaly import AnomalyMode

    active = _active()
    if active is not None:
        state.modes.remove(active)
    if enabled:
        state.modes.append(AnomalyMode(forward=False, infinities=False, check_nan=check_nan))


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on in this thread (PyTorch's or the debugger's)."""
    return _active() is not None


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode checks gradients for NaN."""
    active = _active()
    return active is not None and active.check_nan


class detect_anomaly:  # noqa: N801 - torch.autograd.detect_anomaly's name
    """Context manager (or decorator): anomaly mode on inside, off (as before) after.

    Args:
        check_nan: raise when a grad rule returns NaN (``False``: only record where each op
            was created, for the messages of other errors).
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self._previous: tuple[bool, bool] = (False, True)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self._previous = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _switch(True, self.check_nan)

    def __exit__(self, *exc: object) -> None:
        _switch(*self._previous)

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return run


class set_detect_anomaly:  # noqa: N801 - torch.autograd.set_detect_anomaly's name
    """Turn anomaly mode on or off now (``set_detect_anomaly(True)``); as a context manager,
    the previous setting comes back at the end of the block.

    Args:
        mode: on or off.
        check_nan: raise when a grad rule returns NaN.
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._previous = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _switch(bool(mode), check_nan)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        _switch(*self._previous)
