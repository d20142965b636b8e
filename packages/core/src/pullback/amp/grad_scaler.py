"""Dynamic loss scaling (``torch.amp.GradScaler``'s algorithm and API).

float16 gradients of small losses underflow to zero. The scaler multiplies the loss by a large
factor before backward, divides the gradients by it before the optimizer step, and skips the
step when a gradient came out inf or nan (the factor was too large), lowering the factor; after
``growth_interval`` clean steps in a row it raises the factor again.

The scaler works on any device: it only multiplies ``.grad`` arrays in place with the backend's
array namespace and reads one flag per device per step (the only host synchronization). As
PyTorch's, a scaler for a device type with no usable device (``"cuda"`` without a GPU) warns and
disables itself, so a script written for a GPU runs on the CPU unchanged.
"""

from __future__ import annotations

import enum
import math
import warnings
from typing import Any

from pullback.tensor import Tensor


class _Stage(enum.Enum):
    READY = "ready"
    UNSCALED = "unscaled"
    STEPPED = "stepped"


class _OptimizerState:
    __slots__ = ("stage", "found_inf")

    def __init__(self) -> None:
        self.stage = _Stage.READY
        self.found_inf = False


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps with inf/nan gradients, adapt the scale.

    Args:
        device: the device type of the gradients (``"cuda"`` by default, as PyTorch's); one
            with no usable device here disables the scaler, with PyTorch's warning.
        init_scale: the starting scale factor.
        growth_factor: the scale is multiplied by this after ``growth_interval`` steps in a row
            without inf/nan gradients (> 1).
        backoff_factor: the scale is multiplied by this after a step with inf/nan (in (0, 1)).
        growth_interval: clean steps before the scale grows.
        enabled: ``False`` makes every method a pass-through (``scale`` returns its input,
            ``step`` just steps), so a script can switch mixed precision off with one flag.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if not (init_scale > 0 and math.isfinite(init_scale)):
            raise ValueError(f"GradScaler: init_scale must be positive and finite, got {init_scale}")
        if not growth_factor > 1.0:
            raise ValueError(f"GradScaler: growth_factor must be > 1, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(f"GradScaler: backoff_factor must be in (0, 1), got {backoff_factor}")
        if not (isinstance(growth_interval, int) and growth_interval >= 1):
            raise ValueError(f"GradScaler: growth_interval must be an int >= 1, got {growth_interval!r}")
        self._device = device
        self._enabled = bool(enabled) and _usable(device)
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._optimizers: dict[int, _OptimizerState] = {}

    def is_enabled(self) -> bool:
        """Whether scaling is on."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale factor (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    # -- the training-step API ------------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (a Tensor, or lists/tuples/dicts of them) times the scale factor."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if isinstance(outputs, dict):
            return {k: self.scale(v) for k, v in outputs.items()}
        raise TypeError(f"GradScaler.scale: expected Tensors, got {type(outputs).__name__}")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place, and note
        whether any is inf or nan. Call it before clipping gradients; ``step`` calls it when
        you did not. At most once per optimizer between two ``update`` calls."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state.stage is _Stage.UNSCALED:
            raise RuntimeError("GradScaler.unscale_() has already been called on this optimizer "
                               "since the last update()")
        if state.stage is _Stage.STEPPED:
            raise RuntimeError("GradScaler.unscale_() is being called after step(); call "
                               "update() first")
        state.found_inf = _unscale_grads(optimizer, 1.0 / self._scale)
        state.stage = _Stage.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale the gradients (unless ``unscale_`` did) and run ``optimizer.step(...)``,
        unless a gradient was inf or nan: then the step is skipped. Returns what
        ``optimizer.step`` returned, or ``None`` when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        state = self._state(optimizer)
        if state.stage is _Stage.STEPPED:
            raise RuntimeError("GradScaler.step() has already been called on this optimizer "
                               "since the last update()")
        if state.stage is _Stage.READY:
            self.unscale_(optimizer)
        result = None if state.found_inf else optimizer.step(*args, **kwargs)
        state.stage = _Stage.STEPPED
        return result

    def update(self, new_scale: float | None = None) -> None:
        """Adapt the scale after this iteration's steps: back off if any optimizer found inf or
        nan, grow after ``growth_interval`` clean iterations; or set ``new_scale``."""
        if not self._enabled:
            return
        if new_scale is not None:
            scale = float(new_scale)
            if not (scale > 0 and math.isfinite(scale)):
                raise ValueError(f"GradScaler.update: new_scale must be positive, got {new_scale}")
            self._scale = scale
        else:
            if not self._optimizers:
                raise RuntimeError("GradScaler.update(): no step() or unscale_() was recorded "
                                   "since the last update()")
            if any(s.found_inf for s in self._optimizers.values()):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._optimizers.clear()

    # -- checkpoints ----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The scaler's settings and progress (JSON numbers; empty when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict`."""
        if not self._enabled:
            return
        if not state:
            raise RuntimeError("GradScaler.load_state_dict: the state is empty (it was saved by a "
                               "disabled scaler)")
        missing = {"scale", "growth_factor", "backoff_factor", "growth_interval",
                   "_growth_tracker"} - set(state)
        if missing:
            raise KeyError(f"GradScaler.load_state_dict: missing {', '.join(sorted(missing))}")
        self._scale = float(state["scale"])
        self._growth_factor = float(state["growth_factor"])
        self._backoff_factor = float(state["backoff_factor"])
        self._growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])

    def _state(self, optimizer: Any) -> _OptimizerState:
        state = self._optimizers.get(id(optimizer))
        if state is None:
            state = self._optimizers[id(optimizer)] = _OptimizerState()
        return state


def _usable(device: str) -> bool:
    """Whether ``device`` has a usable device (PyTorch's warning when it has not)."""
    from pullback.backends import backends

    if device == "cpu":
        return True
    backend = backends().get(device)
    if backend is not None and backend.is_available():
        return True
    warnings.warn(f"pullback.amp.GradScaler is enabled, but {device} is not available.  "
                  "Disabling.", UserWarning, stacklevel=3)
    return False


def _unscale_grads(optimizer: Any, inv_scale: float) -> bool:
    """Multiply every gradient of ``optimizer`` by ``inv_scale`` in place; whether any element
    is inf or nan. One flag per device is read back, after all the multiplications are queued."""
    flags: dict[Any, list[Any]] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            backend = g.device.backend
            xp = backend.xp
            with backend.device_scope(g.device.index or 0):
                xp.multiply(g.array, inv_scale, out=g.array)
                flags.setdefault(g.device, []).append(xp.isfinite(g.array).all())
            g._version[0] += 1  # written in place: a graph that saved it must notice
    found_inf = False
    for device, finite in flags.items():
        backend = device.backend
        with backend.device_scope(device.index or 0):
            if not bool(backend.xp.all(backend.xp.stack(finite))):
                found_inf = True
    return found_inf
