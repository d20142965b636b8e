"""The optimizer base class and the registry of optimizers.

An optimizer is a short subclass: its ``__init__`` names its hyper-parameters (PyTorch's names
and defaults), ``_check_group`` validates one parameter group, ``_init_state`` makes the state
of one parameter, and ``_update`` applies one step to one parameter, in place, on the backend
arrays. The base class owns everything else: parameter groups, ``step`` (one pass of in-place
ufuncs per parameter, no graph, no temporaries), ``zero_grad``, ``add_param_group`` and
``state_dict``/``load_state_dict`` (see :mod:`pullback.optim._state_dict`).
"""

from __future__ import annotations

from numbers import Real
from typing import Any, Callable, Iterable

from pullback import Tensor, enable_grad, zeros_like
from pullback.dispatch import run_array_update
from pullback.dtypes import is_floating
from pullback.errors import ShapeError

from . import _state_dict
from ._registry import Registry
from .errors import HyperparameterError, ParamGroupError, OptimizerTypeError

OPTIMIZERS = Registry("optimizer")
"""Optimizer classes by name (``OPTIMIZERS["adamw"] is AdamW``)."""

ParamsT = Iterable[Tensor] | Iterable[dict[str, Any]]


def mark_modified(*tensors: Tensor) -> None:
    """Record that the arrays of ``tensors`` were written in place.

    Bumps each tensor's version counter, so that a graph which saved the tensor for backward
    raises a clear error instead of using the new values. Call it after writing into
    ``t.array`` directly (every optimizer step and gradient clip does).
    """
    for t in tensors:
        t._version[0] += 1


class Optimizer:
    """Base class of optimizers (mirrors ``torch.optim.Optimizer``).

    Args:
        params: an iterable of Tensors, or of dicts (parameter groups) that each hold
            ``"params"`` and any per-group hyper-parameters overriding ``defaults``.
        defaults: the hyper-parameters of groups that do not set their own.

    Attributes:
        param_groups: list of dicts, each with ``"params"`` (a list of Tensors) and every
            hyper-parameter; schedulers change ``"lr"`` (and momentum) here.
        state: per-parameter state (a dict of Tensors and numbers), keyed by the parameter.
        defaults: the hyper-parameters given to the constructor.
    """

    supports_param_groups = True  # False: one group only (LBFGS's flat vector)
    requires_closure = False  # True: step(closure) re-evaluates the loss itself (LBFGS)

    def __init__(self, params: ParamsT, defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state: dict[Tensor, dict[str, Any]] = {}
        self._scratch_buffers: dict[Any, Any] = {}
        self._scratch_views: dict[Any, tuple[Any, Any]] = {}
        self._opt_called = False  # set by step(): a scheduler stepped first warns
        groups = _as_groups(params)
        if not groups:
            raise ParamGroupError(f"{type(self).__name__} got an empty parameter list")
        for group in groups:
            self.add_param_group(group)

    # -- what a subclass implements ----------------------------------------------------------
    def _check_group(self, group: dict[str, Any]) -> None:
        """Raise :class:`HyperparameterError` for an invalid setting in ``group``."""
        require_non_negative(group, "lr")

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        """The state of ``param`` before its first step (Tensors and JSON numbers)."""
        return {}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        """Apply one step to ``p.array`` in place, given the gradient array ``grad``.

        ``xp`` is the array namespace; ``scratch`` two arrays shaped like ``p`` that the update
        may overwrite. ``grad`` must not be written (it is the user's ``p.grad``).
        """
        raise NotImplementedError

    # -- the public API ------------------------------------------------------------------------
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; return ``closure()``'s loss, if given.

        Args:
            closure: re-evaluates the model and returns the loss (run with grad enabled).
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        # Through dispatch, so that a mode (the compiler's tracer) can record the update.
        run_array_update(self._update_all)
        self._opt_called = True  # for the schedulers' check of the call order
        return loss

    def _update_all(self, namespace_of: Callable[[Any], Any]) -> None:
        """One update of every parameter that has a gradient, with the array namespace
        ``namespace_of(device)``."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                grad, data, device = grad.array, p.array, p.device
                if grad.shape != data.shape:
                    raise ShapeError(
                        f"{type(self).__name__}.step: a parameter of shape {tuple(data.shape)} "
                        f"has a gradient of shape {tuple(grad.shape)}"
                    )
                state = self.state.get(p)
                if state is None:
                    state = self.state[p] = self._init_state(p, group)
                xp = namespace_of(device)
                self._update(xp, p, grad, state, group, self._scratch(xp, device, data))
                mark_modified(p)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients: to ``None`` (default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                elif not grad.is_leaf:  # built with create_graph: cut it from its graph
                    p.grad = zeros_like(grad)
                else:
                    grad.array.fill(0)
                    mark_modified(grad)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own hyper-parameters) to optimize from now on.

        Raises:
            OptimizerTypeError: a parameter that is not a floating point Tensor.
            ParamGroupError: no parameters, a non-leaf, or a tensor already optimized.
            HyperparameterError: an invalid hyper-parameter.
        """
        if not isinstance(param_group, dict):
            raise OptimizerTypeError(
                f"a param group must be a dict, got {type(param_group).__name__}"
            )
        index = len(self.param_groups)
        params = _as_param_list(param_group.get("params"), f"param group {index}")
        if not params:
            raise ParamGroupError(f"param group {index} has an empty parameter list")
        seen = {id(p): (g, i) for g, grp in enumerate(self.param_groups)
                for i, p in enumerate(grp["params"])}
        for i, p in enumerate(params):
            where = f"parameter {i} of param group {index}"
            _check_param(p, where)
            if id(p) in seen:
                g, j = seen[id(p)]
                raise ParamGroupError(
                    f"{where} (shape {tuple(p.shape)}) is listed twice: it is also parameter "
                    f"{j} of param group {g}"
                )
            seen[id(p)] = (index, i)
        group = {**self.defaults, **param_group, "params": params}
        self._check_group(group)
        self.param_groups.append(group)

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state: ``{"state": {index: {...}}, "param_groups": [{...}]}``.

        Parameters are replaced by their index in the order the groups list them. Values are
        Tensors (parameter-shaped state, shared with the optimizer, as in PyTorch) and plain
        JSON values, ready for :func:`pullback.save`.
        """
        return _state_dict.pack(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (also one that went through JSON, with string keys
        and lists for tuples). State tensors are copied to each parameter's device and dtype.

        Raises:
            CheckpointError: the state dict does not fit this optimizer's parameter groups.
        """
        _state_dict.unpack(self, state_dict)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])

    # -- scratch arrays ------------------------------------------------------------------------
    def _scratch(self, xp: Any, device: Any, like: Any) -> tuple[Any, Any]:
        """Two arrays shaped like ``like`` (views of one buffer per device and dtype, kept
        between steps), so that an update allocates nothing."""
        # Devices are interned: id() is a cheaper key than their Python-level __hash__.
        key = (id(device), like.dtype, like.shape)
        views = self._scratch_views.get(key)
        if views is None:
            kind = key[:2]
            n = like.size
            flat = self._scratch_buffers.get(kind)
            if flat is None or flat.size < 2 * n:
                flat = self._scratch_buffers[kind] = xp.empty_like(like, shape=(2 * n,))
                # views of the smaller buffer would keep it alive: drop them
                for k in [k for k in self._scratch_views if k[:2] == kind]:
                    del self._scratch_views[k]
            views = (flat[:n].reshape(like.shape), flat[n:2 * n].reshape(like.shape))
            self._scratch_views[key] = views
        return views


# -- validation ------------------------------------------------------------------------------

def _as_groups(params: Any) -> list[dict[str, Any]]:
    if isinstance(params, Tensor):
        raise OptimizerTypeError(
            "params should be an iterable of Tensors or of dicts, got a single Tensor of shape "
            f"{tuple(params.shape)}; wrap it in a list"
        )
    if isinstance(params, (set, frozenset)):
        raise OptimizerTypeError("params must be an ordered iterable (a list), not a set: the order "
                             "of parameters must be the same from run to run")
    try:
        items = list(params)
    except TypeError:
        raise OptimizerTypeError(
            f"params should be an iterable of Tensors or of dicts, got {type(params).__name__}"
        ) from None
    if items and all(isinstance(x, dict) for x in items):
        return items
    return [{"params": items}] if items else []


def _as_param_list(params: Any, where: str) -> list[Tensor]:
    if params is None:
        raise ParamGroupError(f"{where} has no 'params' key")
    if isinstance(params, Tensor):
        return [params]
    if isinstance(params, (set, frozenset)):
        raise OptimizerTypeError(f"{where}: parameters must be in an ordered list, not a set")
    try:
        return list(params)
    except TypeError:
        raise OptimizerTypeError(
            f"{where}: 'params' should be an iterable of Tensors, got {type(params).__name__}"
        ) from None


def _check_param(p: Any, where: str) -> None:
    if isinstance(p, dict):
        raise OptimizerTypeError(f"{where} is a dict: give either Tensors or param group dicts, "
                             "not a mix")
    if not isinstance(p, Tensor):
        raise OptimizerTypeError(f"{where} is {type(p).__name__}, not a Tensor")
    if not is_floating(p.dtype):
        raise OptimizerTypeError(
            f"{where} has dtype {p.dtype}; only floating point tensors can be optimized"
        )
    if not p.is_leaf:
        raise ParamGroupError(
            f"{where} (shape {tuple(p.shape)}) is not a leaf tensor: it was computed by op "
            f"'{p.grad_fn.name}'. Optimize the leaf it came from, or make a new leaf with "
            ".detach().requires_grad_()"
        )


def require_non_negative(group: dict[str, Any], *names: str) -> None:
    """Raise :class:`HyperparameterError` unless each ``group[name]`` is a real number >= 0."""
    for name in names:
        value = group[name]
        if isinstance(value, bool) or not isinstance(value, Real):
            raise HyperparameterError(f"{name} must be a real number, got {value!r}")
        if not float(value) >= 0:  # also catches NaN
            raise HyperparameterError(f"invalid {name}: {value!r} (it must be >= 0)")


def require_betas(group: dict[str, Any]) -> None:
    """Raise :class:`HyperparameterError` unless ``group["betas"]`` is two numbers in [0, 1)."""
    betas = group["betas"]
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise HyperparameterError(f"betas must be a pair of numbers, got {betas!r}")
    for i, beta in enumerate(betas):
        if isinstance(beta, bool) or not isinstance(beta, Real) or not 0.0 <= float(beta) < 1.0:
            raise HyperparameterError(
                f"invalid betas[{i}]: {beta!r} (each beta must be in [0, 1))"
            )
