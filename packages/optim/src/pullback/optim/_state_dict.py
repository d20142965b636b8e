"""An optimizer's state as a nested dict of Tensors and JSON values, and back.

The layout is PyTorch's: ``{"state": {index: {name: value}}, "param_groups": [{..., "params":
[index, ...]}]}``, where ``index`` numbers the parameters in the order the groups list them.
A checkpoint format that stores the non-tensor part as JSON turns the integer keys into strings
and tuples into lists; :func:`unpack` accepts both, so that a resumed run is bit-for-bit the
run that was saved.

A state dict may come from a file someone else wrote, so :func:`unpack` checks everything a
later ``step()`` will read before it replaces anything: the types of the containers, every
hyper-parameter against the kind of value the optimizer holds there, and every entry of a
parameter's state against the state the optimizer would make for it (a moment buffer must be a
real tensor of the parameter's shape, ``step`` a non-negative integer...). A state that would
fail at the next step is a :class:`CheckpointError` now, naming the group or parameter and the
entry.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np

from pullback import Tensor
from pullback.errors import CheckpointError

if TYPE_CHECKING:
    from .optimizer import Optimizer


def pack(opt: Optimizer) -> dict[str, Any]:
    """``opt.state_dict()``."""
    index: dict[int, int] = {}
    groups = []
    for group in opt.param_groups:
        ids = [index.setdefault(id(p), len(index)) for p in group["params"]]
        groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
    state = {index[id(p)]: dict(values) for p, values in opt.state.items()}
    return {"state": state, "param_groups": groups}


def unpack(opt: Optimizer, state_dict: dict[str, Any]) -> None:
    """``opt.load_state_dict(state_dict)``: check everything, then replace state and groups."""
    name = f"{type(opt).__name__}.load_state_dict"
    check_layout(state_dict, name)
    saved_groups, saved_state = state_dict["param_groups"], state_dict["state"]
    if not isinstance(saved_groups, (list, tuple)):
        raise CheckpointError(f"{name}: 'param_groups' must be a list, got "
                              f"{type(saved_groups).__name__}")
    if not isinstance(saved_state, dict):
        raise CheckpointError(f"{name}: 'state' must be a dict, got {type(saved_state).__name__}")
    if len(saved_groups) != len(opt.param_groups):
        raise CheckpointError(f"{name}: the state dict has {len(saved_groups)} param groups, "
                              f"this optimizer has {len(opt.param_groups)}")
    by_index: dict[int, tuple[Tensor, dict[str, Any]]] = {}
    new_groups = []
    for g, (saved, group) in enumerate(zip(saved_groups, opt.param_groups)):
        restored = _restore_group(opt, saved, group, f"{name}: param group {g}")
        for i, p in zip(_indices(saved, group, f"{name}: param group {g}"), group["params"]):
            if i in by_index:
                raise CheckpointError(f"{name}: parameter index {i} is listed twice in the "
                                      "param groups")
            by_index[i] = (p, restored)
        new_groups.append(restored)
    new_state = {}
    for key, values in saved_state.items():
        i = _index(key, name)
        if i not in by_index:
            raise CheckpointError(f"{name}: the state dict has state for parameter {i}, but its "
                                  f"param groups list only {len(by_index)} parameters")
        if not isinstance(values, dict):
            raise CheckpointError(f"{name}: the state of parameter {i} must be a dict, got "
                                  f"{type(values).__name__}")
        if values:  # an empty state is no state: the first step makes it
            p, group = by_index[i]
            new_state[p] = opt._restore_param_state(p, group, values,
                                                    f"{name}: state of parameter {i}")
    opt.state = new_state
    opt.param_groups = new_groups


def check_layout(state_dict: Any, name: str) -> None:
    """Raise :class:`CheckpointError` unless ``state_dict`` is a dict with 'state' and
    'param_groups'."""
    if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= state_dict.keys():
        got = sorted(map(str, state_dict)) if isinstance(state_dict, dict) else \
            type(state_dict).__name__
        raise CheckpointError(f"{name}: expected a dict with 'state' and 'param_groups', got {got}")


def _restore_group(opt: Optimizer, saved: Any, group: dict[str, Any], where: str
                   ) -> dict[str, Any]:
    """The param group ``saved`` describes, with the parameters of ``group``: each setting
    checked against the kind ``group`` holds (a setting the saved group lacks, from an older
    version, keeps the optimizer's), then by the optimizer's own checks."""
    if not isinstance(saved, dict):
        raise CheckpointError(f"{where} must be a dict, got {type(saved).__name__}")
    restored = {}
    for k, current in group.items():
        if k == "params":
            continue
        if k not in saved:
            restored[k] = current
            continue
        check_like(saved[k], current, f"{where}: {k!r}")
        restored[k] = _restore_value(saved[k], current)
    restored.update({k: v for k, v in saved.items() if k not in group})
    restored["params"] = group["params"]
    try:
        opt._check_group(restored)
    except (ValueError, TypeError, KeyError) as exc:
        raise CheckpointError(f"{where}: {exc}") from None
    return restored


def _indices(saved: dict[str, Any], group: dict[str, Any], where: str) -> list[int]:
    ids = saved.get("params", [])
    if not isinstance(ids, (list, tuple)):
        raise CheckpointError(f"{where}: 'params' must be a list of indices, got "
                              f"{type(ids).__name__}")
    if len(ids) != len(group["params"]):
        raise CheckpointError(f"{where} of the state dict has {len(ids)} parameters, this "
                              f"optimizer's has {len(group['params'])}")
    return [_index(i, where) for i in ids]


def _index(key: Any, name: str) -> int:
    if isinstance(key, bool) or not isinstance(key, (int, str)):
        raise CheckpointError(f"{name}: parameter index {key!r} is not an integer")
    try:
        return int(key)
    except ValueError:
        raise CheckpointError(f"{name}: parameter index {key!r} is not an integer") from None


def _restore_value(value: Any, current: Any) -> Any:
    """A setting back in the type the optimizer uses (JSON makes tuples lists)."""
    if isinstance(value, list):
        return tuple(value) if isinstance(current, tuple) else list(value)
    return value


def restore_param_state(opt: Optimizer, p: Tensor, group: dict[str, Any],
                        saved: dict[str, Any], where: str) -> dict[str, Any]:
    """The state of ``p`` that ``saved`` describes, checked against the state the optimizer
    makes for ``p`` (``_init_state``): the same entries, each of the same kind; a tensor that
    the optimizer adds later (SGD's momentum buffer) must have ``p``'s shape."""
    template = opt._init_state(p, group)
    missing = sorted(template.keys() - saved.keys())
    if missing:
        raise CheckpointError(f"{where} lacks {missing}, which a step of "
                              f"{type(opt).__name__} reads")
    out = {}
    for key, value in saved.items():
        entry = f"{where}: {key!r}"
        if key in template:
            out[key] = restore_like(value, template[key], entry)
        elif isinstance(value, (Tensor, np.ndarray)):
            out[key] = restore_tensor(value, _empty_like(p), entry)
        else:
            raise CheckpointError(f"{entry} is not state that {type(opt).__name__} keeps "
                                  f"(a {type(value).__name__})")
    return out


def _empty_like(p: Tensor) -> Tensor:
    from pullback import empty_like

    return empty_like(p)


def restore_like(value: Any, like: Any, entry: str) -> Any:
    """``value`` restored as the kind of ``like``, a value of a fresh state: a tensor is copied
    into ``like`` itself (on its device and dtype), a count must be a non-negative integer, a
    float a real number."""
    if isinstance(like, Tensor):
        return restore_tensor(value, like, entry)
    if isinstance(like, Integral) and not isinstance(like, bool):
        return restore_count(value, entry)
    if isinstance(like, Real) and not isinstance(like, bool):
        return restore_real(value, entry)
    check_like(value, like, entry)
    return value


def restore_tensor(value: Any, into: Tensor, entry: str) -> Tensor:
    """``value``, a real Tensor or array of ``into``'s shape, copied into ``into``."""
    if not isinstance(value, (Tensor, np.ndarray)):
        raise CheckpointError(f"{entry} must be a tensor of shape {tuple(into.shape)}, got "
                              f"{type(value).__name__}")
    if tuple(value.shape) != tuple(into.shape):
        raise CheckpointError(f"{entry} has shape {tuple(value.shape)}, the parameter has "
                              f"shape {tuple(into.shape)}")
    array = value.to(into.device).array if isinstance(value, Tensor) else \
        into.device.backend.asarray(value)
    if np.dtype(array.dtype).kind not in "fiu":
        raise CheckpointError(f"{entry} has dtype {array.dtype}; optimizer state is real "
                              "numbers")
    into.device.backend.xp.copyto(into.array, array, casting="unsafe")
    return into


def restore_count(value: Any, entry: str) -> int:
    """``value`` as a count: a non-negative integer (an integral float from JSON too)."""
    integral = isinstance(value, Integral) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral or not value >= 0:
        raise CheckpointError(f"{entry} must be a non-negative integer, got {value!r}")
    return int(value)


def restore_real(value: Any, entry: str) -> float:
    """``value`` as a real number."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise CheckpointError(f"{entry} must be a real number, got {value!r}")
    return float(value)


_JSON_SCALARS = (type(None), bool, int, float, str)


def check_like(saved: Any, current: Any, where: str) -> None:
    """Raise :class:`CheckpointError` (its message starting with ``where``) unless ``saved`` is
    a JSON value of the kind of ``current``: a bool for a bool, a number for a number (an int
    given as a hyper-parameter may come back a float), a string for a string, a list of as
    many items for a list or tuple (item by item), a dict of the same keys for a dict. Where
    ``current`` is ``None`` any JSON scalar is taken; where it is an object (a function,
    another scheduler), its owner checks."""
    if isinstance(current, bool):
        ok = isinstance(saved, bool)
    elif isinstance(current, Real):
        ok = isinstance(saved, Real) and not isinstance(saved, bool)
    elif current is None:
        ok = isinstance(saved, _JSON_SCALARS)
    elif isinstance(current, str):
        ok = isinstance(saved, str)
    elif isinstance(current, (list, tuple)):
        ok = isinstance(saved, (list, tuple)) and len(saved) == len(current)
        if ok:
            for i, (s, c) in enumerate(zip(saved, current)):
                check_like(s, c, f"{where}[{i}]")
    elif isinstance(current, dict):
        ok = isinstance(saved, dict) and saved.keys() == current.keys()
        if ok:
            for k in current:
                check_like(saved[k], current[k], f"{where}[{k!r}]")
    else:
        return
    if not ok:
        raise CheckpointError(f"{where} holds {type(saved).__name__} {str(saved)[:60]!r} where "
                              f"{_kind(current)} belongs")


def _kind(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}" if value is not None else "None"
