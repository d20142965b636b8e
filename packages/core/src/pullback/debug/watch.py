"""Activation statistics from a forward pass, attributed to the modules that produced them.

``watch(model)`` is a dispatch mode plus forward hooks. The hooks keep the stack of modules
being run, and remember which module produced each output tensor; the mode sees every
activation op (relu, gelu, tanh, sigmoid) and credits its statistics to the innermost module
running it and to the module that produced its input (the layer that feeds it). That works for
activation modules (``nn.ReLU``) and for functional calls inside a ``forward`` alike.

Any object with ``named_modules()`` works; modules without ``register_forward_pre_hook`` /
``register_forward_hook`` (duck-typed models) are attributed to the model as a whole.
pullback.nn is never imported here: the core works without it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..dispatch import DispatchMode, apply, state
from ..registry import Op
from ..tensor import Tensor

# A unit whose pre-activation stays below this for every input passes (almost) no gradient:
# relu's gradient is 0 there, gelu's is below 1.3% of its maximum (x = -3).
DEAD_BELOW = {"relu": 0.0, "gelu": -3.0}
# Outputs this close to the asymptotes have derivatives below ~2% (tanh) / ~4% (sigmoid) of
# the maximum: the unit is saturated.
_SATURATED = {"tanh": (-0.99, 0.99), "sigmoid": (0.01, 0.99)}
WATCHED_OPS = frozenset(DEAD_BELOW) | frozenset(_SATURATED)


@dataclass
class ActivationStats:
    """What one activation site saw over every forward call inside the ``watch``.

    Attributes:
        module: the innermost module running the op ("" for the model itself).
        op: ``"relu"``, ``"gelu"``, ``"tanh"`` or ``"sigmoid"``.
        fed_by: the module whose output the op read (``None`` if not produced by a module).
        calls: forward calls seen.
        units: number of units (the last axis; axis 1 of 4-D NCHW maps, i.e. channels).
        elements: activation values seen.
        ever_alive: per unit, whether any input put it in its live region (relu, gelu).
        saturated: values in the flat tails (tanh, sigmoid).
        always_saturated: per unit, whether every value was saturated (tanh, sigmoid).
    """

    module: str
    op: str
    fed_by: str | None
    calls: int = 0
    units: int = 0
    elements: int = 0
    ever_alive: np.ndarray | None = None
    saturated: int = 0
    always_saturated: np.ndarray | None = None
    _sum: float = 0.0
    _sum_sq: float = 0.0
    _in_sum: float = 0.0
    _in_sum_sq: float = 0.0

    @property
    def site(self) -> str:
        """Where the op ran, for messages: ``"relu after fc1 (in the model)"``."""
        where = self.module or "the model"
        if self.fed_by is not None and self.fed_by != self.module:
            return f"{self.op} after {self.fed_by} (in {where})"
        return f"{self.op} in {where}"

    @property
    def dead_fraction(self) -> float | None:
        """Fraction of units that never left the dead region (relu, gelu), else ``None``."""
        if self.ever_alive is None or self.units == 0:
            return None
        return float(1.0 - self.ever_alive.mean())

    @property
    def saturated_fraction(self) -> float | None:
        """Fraction of values in the flat tails (tanh, sigmoid), else ``None``."""
        if self.op not in _SATURATED or self.elements == 0:
            return None
        return self.saturated / self.elements

    @property
    def always_saturated_fraction(self) -> float | None:
        """Fraction of units saturated for every input (tanh, sigmoid), else ``None``."""
        if self.always_saturated is None or self.units == 0:
            return None
        return float(self.always_saturated.mean())

    @property
    def mean(self) -> float:
        """Mean of the activation's outputs."""
        return _mean(self._sum, self.elements)

    @property
    def std(self) -> float:
        """Standard deviation of the activation's outputs."""
        return _std(self._sum, self._sum_sq, self.elements)

    @property
    def input_mean(self) -> float:
        """Mean of the pre-activations (the op's input)."""
        return _mean(self._in_sum, self.elements)

    @property
    def input_std(self) -> float:
        """Standard deviation of the pre-activations."""
        return _std(self._in_sum, self._in_sum_sq, self.elements)

    def add(self, x: np.ndarray, out: np.ndarray) -> None:
        """Fold one call's input and output (host arrays) into the statistics."""
        axis = 1 if out.ndim == 4 else out.ndim - 1
        units = out.shape[axis] if out.ndim else 1
        per_unit_x = np.moveaxis(x, axis, -1).reshape(-1, units) if out.ndim else x.reshape(1, 1)
        per_unit_y = np.moveaxis(out, axis, -1).reshape(-1, units) if out.ndim else out.reshape(1, 1)
        if self.units and units != self.units:  # the same site with another width: start over
            self.ever_alive = self.always_saturated = None
        self.units = units
        self.calls += 1
        self.elements += out.size
        y64 = per_unit_y.astype(np.float64)
        x64 = per_unit_x.astype(np.float64)
        self._sum += float(y64.sum())
        self._sum_sq += float((y64 * y64).sum())
        self._in_sum += float(x64.sum())
        self._in_sum_sq += float((x64 * x64).sum())
        if self.op in DEAD_BELOW:
            alive: np.ndarray = np.asarray((per_unit_x > DEAD_BELOW[self.op]).any(axis=0))
            self.ever_alive = alive if self.ever_alive is None else self.ever_alive | alive
        else:
            lo, hi = _SATURATED[self.op]
            flat = (per_unit_y < lo) | (per_unit_y > hi)
            self.saturated += int(flat.sum())
            always: np.ndarray = np.asarray(flat.all(axis=0))
            self.always_saturated = always if self.always_saturated is None \
                else self.always_saturated & always


def _mean(total: float, n: int) -> float:
    return total / n if n else 0.0


def _std(total: float, total_sq: float, n: int) -> float:
    return float(np.sqrt(max(total_sq / n - (total / n) ** 2, 0.0))) if n else 0.0


@dataclass
class LayerScale:
    """Scale of a parameter-owning module's input and output (its last forward call).

    ``gain`` compares the spread of the output (its standard deviation, so that a constant
    shift by the bias does not count) with the RMS of the input.
    """

    module: str
    input_rms: float
    output_std: float
    calls: int = 0

    @property
    def gain(self) -> float:
        """How many times wider the output is than the input."""
        return self.output_std / self.input_rms if self.input_rms > 0 else float("inf")


def _host_float(t: Any) -> np.ndarray | None:
    if not isinstance(t, Tensor) or t.dtype.kind not in "f" or t.array.size == 0:
        return None
    return t.device.backend.to_host(t.array).astype(np.float64)


def parameter_owners(model: Any) -> dict[str, str]:
    """``parameter name -> name of the module that owns it`` (the longest module prefix)."""
    modules = [name for name, _ in model.named_modules()] if hasattr(model, "named_modules") \
        else [""]
    owners = {}
    for pname, _ in model.named_parameters():
        best = ""
        for m in modules:
            if m and pname.startswith(m + ".") and len(m) > len(best):
                best = m
        owners[pname] = best
    return owners


class watch(DispatchMode):  # noqa: N801 - a context manager
    """Record activation statistics and layer scales of ``model`` while the block runs.

    Example::

        with pullback.debug.watch(model) as w:
            loss = loss_fn(model(x), y)
            loss.backward()
        print(w.explain())            # = explain_gradients(model, watch=w)

    Args:
        model: an object with ``named_parameters()`` and ``named_modules()``
            (a ``pullback.nn.Module``).
    """

    def __init__(self, model: Any) -> None:
        if not hasattr(model, "named_parameters"):
            raise TypeError(f"watch: expected a model with named_parameters(), got "
                            f"{type(model).__name__}")
        self.model = model
        self.activations: dict[tuple[str, str, str | None], ActivationStats] = {}
        self.layer_scales: dict[str, LayerScale] = {}
        self._running: list[str] = []
        self._produced: dict[int, tuple[Any, str]] = {}  # id(tensor) -> (weakref, module name)
        self._handles: list[Any] = []

    # -- context -----------------------------------------------------------------------------
    def __enter__(self) -> watch:
        owners = set(parameter_owners(self.model).values())
        modules = self.model.named_modules() if hasattr(self.model, "named_modules") else ()
        for name, module in modules:
            if hasattr(module, "register_forward_pre_hook") and hasattr(module, "register_forward_hook"):
                self._handles.append(module.register_forward_pre_hook(self._pre_hook(name)))
                self._handles.append(module.register_forward_hook(self._post_hook(name, name in owners)))
        state.modes.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in state.modes:
            state.modes.remove(self)
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._running.clear()
        self._produced.clear()

    def _pre_hook(self, name: str) -> Any:
        def pre(module: Any, args: Any) -> None:
            self._running.append(name)

        return pre

    def _post_hook(self, name: str, owns_parameters: bool) -> Any:
        def post(module: Any, args: Any, output: Any) -> None:
            # Pop down to this module: a forward that raised may have left entries above it.
            while self._running and self._running.pop() != name:
                pass
            if isinstance(output, Tensor):
                self._produced[id(output)] = (weakref.ref(output), name)
                if owns_parameters:
                    self._record_scale(name, args, output)

        return post

    def _record_scale(self, name: str, args: Any, output: Tensor) -> None:
        x = _host_float(next((a for a in args if isinstance(a, Tensor)), None))
        y = _host_float(output)
        if x is None or y is None:
            return
        scale = self.layer_scales.get(name)
        calls = 1 if scale is None else scale.calls + 1
        self.layer_scales[name] = LayerScale(name, float(np.sqrt(np.mean(x * x))),
                                             float(y.std()), calls)

    def _producer(self, t: Any) -> str | None:
        entry = self._produced.get(id(t))
        if entry is None or entry[0]() is not t:
            return None
        return entry[1]

    # -- mode --------------------------------------------------------------------------------
    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        out = apply(op, *args, **attrs)
        if op.name in WATCHED_OPS and isinstance(args[0], Tensor):
            x = args[0]
            site = self._running[-1] if self._running else ""
            key = (site, op.name, self._producer(x))
            stats = self.activations.get(key)
            if stats is None:
                stats = self.activations[key] = ActivationStats(site, op.name, key[2])
            to_host = x.device.backend.to_host
            stats.add(to_host(x.array), to_host(out.array))
        return out

    def explain(self, lr: float = 1e-3, optimizer: Any = None) -> Any:
        """:func:`explain_gradients` of the watched model, with these statistics."""
        from .explain import explain_gradients

        return explain_gradients(self.model, lr=lr, optimizer=optimizer, watch=self)
