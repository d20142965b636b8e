"""An optimizer's state as a nested dict of Tensors and JSON values, and back.

The layout is PyTorch's: ``{"state": {index: {name: value}}, "param_groups": [{..., "params":
[index, ...]}]}``, where ``index`` numbers the parameters in the order the groups list them.
A checkpoint format that stores the non-tensor part as JSON turns the integer keys into strings
and tuples into lists; :func:`unpack` accepts both, so that a resumed run is bit-for-bit the
run that was saved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pullback import Tensor, empty_like
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
    """``opt.load_state_dict(state_dict)``: validate everything, then replace state and groups."""
    name = type(opt).__name__
    if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= state_dict.keys():
        got = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
        raise CheckpointError(
            f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups', got {got}"
        )
    saved_groups = state_dict["param_groups"]
    if len(saved_groups) != len(opt.param_groups):
        raise CheckpointError(
            f"{name}.load_state_dict: the state dict has {len(saved_groups)} param groups, "
            f"this optimizer has {len(opt.param_groups)}"
        )
    by_index: dict[int, Tensor] = {}
    new_groups = []
    for g, (saved, group) in enumerate(zip(saved_groups, opt.param_groups)):
        ids = saved.get("params", [])
        if len(ids) != len(group["params"]):
            raise CheckpointError(
                f"{name}.load_state_dict: param group {g} of the state dict has {len(ids)} "
                f"parameters, this optimizer's has {len(group['params'])}"
            )
        for i, p in zip(ids, group["params"]):
            by_index[_index(i, name)] = p
        restored = {k: _restore_value(v, opt.defaults.get(k)) for k, v in saved.items()
                    if k != "params"}
        restored["params"] = group["params"]
        opt._check_group(restored)
        new_groups.append(restored)
    new_state = {}
    for key, values in state_dict["state"].items():
        i = _index(key, name)
        if i not in by_index:
            raise CheckpointError(
                f"{name}.load_state_dict: the state dict has state for parameter {i}, but its "
                f"param groups list only {len(by_index)} parameters"
            )
        p = by_index[i]
        new_state[p] = {k: _restore_state(v, p, k, i, name) for k, v in values.items()}
    opt.state = new_state
    opt.param_groups = new_groups


def _index(key: Any, name: str) -> int:
    try:
        return int(key)
    except (TypeError, ValueError):
        raise CheckpointError(
            f"{name}.load_state_dict: parameter index {key!r} is not an integer"
        ) from None


def _restore_value(value: Any, default: Any) -> Any:
    """A hyper-parameter back in the type the optimizer uses (JSON makes tuples lists)."""
    if isinstance(value, list):
        return tuple(value) if isinstance(default, tuple) else list(value)
    return value


def _restore_state(value: Any, p: Tensor, key: str, index: int, name: str) -> Any:
    """One entry of a parameter's state: tensors become copies on ``p``'s device and dtype."""
    if isinstance(value, Tensor):
        if tuple(value.shape) != tuple(p.shape):
            raise CheckpointError(
                f"{name}.load_state_dict: state {key!r} of parameter {index} has shape "
                f"{tuple(value.shape)}, the parameter has shape {tuple(p.shape)}"
            )
        copy = empty_like(p)
        copy.device.backend.xp.copyto(copy.array, value.to(p.device).array, casting="same_kind")
        return copy
    if key == "step":
        return int(value)
    return value
