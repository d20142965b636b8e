"""A Graph as plain data, and back: how a GraphModule goes into a checkpoint
(``pullback.save(gm, f)``) without pickle and without storing code.

A node is written as its name, op, target and arguments; a function target by the name code
calls it by (``pullback.relu``, ``operator.add``, ``math.sqrt``, a wrapped function's
``module.name``); arguments as tagged JSON (``{"node": "x"}``, ``{"slice": [...]}``...). The
generated ``forward`` is not written: loading regenerates it from the graph.

A file is data from a stranger, and a graph is a program, so loading accepts only what cannot
reach beyond the model: functions from pullback's public namespaces, the operators, ``math``, a
few builtins, and functions the allow-list names (``pullback.serialization.add_safe_globals``);
method names and attribute names without a leading underscore; ``get_attr``/``call_module``
paths through the module's registered submodules, parameters and buffers; identifiers for
names. Anything else is a :class:`~pullback.errors.CheckpointError` naming the node.
"""

from __future__ import annotations

import builtins
import keyword
import math
import operator
import re
from typing import Any

import numpy as np

from pullback.backends import Device
from pullback.errors import CheckpointError

from ._codegen import _DTYPE_NAMES
from ._names import MAGIC_OPERATORS, public_functions, qualified_name
from .graph import Graph
from .node import OPS, Node

VERSION = 1
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PUBLIC_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_PATH_PART = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)$")
# Builtins a loaded graph may call (the ones tracing records: wrap("len"), getattr nodes,
# conversions); never eval, exec, open, __import__ and the like.
_SAFE_BUILTINS = {name: getattr(builtins, name) for name in (
    "abs", "bool", "float", "getattr", "int", "len", "max", "min", "round", "sum", "tuple",
    "list", "range", "slice")}
_SAFE_OPERATORS = {f.__name__: f for f in (*MAGIC_OPERATORS, operator.setitem)}
# pullback's public functions a loaded graph may call: computations, not those that read or
# write files, change global settings or compile (pullback.save, set_default_dtype...).
_LOADABLE_MODULES = ("pullback._ops", "pullback.creation", "pullback.linalg",
                     "pullback.nn.functional", "pullback._introspection", "pullback.dtypes")
_NOT_LOADABLE = {"manual_seed", "set_rng_state", "set_default_dtype", "from_dlpack"}
_BUILTIN_TYPES = {t.__name__: t for t in (int, float, bool, complex, str, tuple, list, dict,
                                          slice)}
_DTYPES_BY_NAME = {name: dtype for dtype, name in _DTYPE_NAMES.items()}


# -- writing -------------------------------------------------------------------------------
def graph_to_data(graph: Graph) -> dict[str, Any]:
    """``graph`` as JSON-able data (see the module's docstring)."""
    nodes = []
    for node in graph.nodes:
        target = node.target
        nodes.append({
            "name": node.name, "op": node.op,
            "target": {"function": _function_name(target)} if node.op == "call_function"
            else target,
            "args": _to_data(node.args, node), "kwargs": _to_data(node.kwargs, node),
        })
    return {"version": VERSION, "nodes": nodes}


def _function_name(fn: Any) -> str:
    from ._symbolic_trace import assert_specialized

    if fn in public_functions() or fn is assert_specialized:
        return qualified_name(fn)
    if _SAFE_OPERATORS.get(getattr(fn, "__name__", "")) is fn:
        return f"operator.{fn.__name__}"
    if getattr(math, getattr(fn, "__name__", ""), None) is fn:
        return f"math.{fn.__name__}"
    if _SAFE_BUILTINS.get(getattr(fn, "__name__", "")) is fn:
        return fn.__name__
    from pullback.serialization import global_name

    return global_name(fn)  # loaded through the allow-list


def _to_data(a: Any, node: Node) -> Any:
    if isinstance(a, Node):
        return {"node": a.name}
    if isinstance(a, tuple):
        if hasattr(a, "_fields"):
            raise CheckpointError(f"node {node.name!r}: a named tuple argument cannot be stored")
        return {"tuple": [_to_data(x, node) for x in a]}
    if isinstance(a, list):
        return [_to_data(x, node) for x in a]
    if isinstance(a, dict):
        if not all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in a):
            raise CheckpointError(f"node {node.name!r}: dict keys must be str or int to be stored")
        return {"dict": [[k, _to_data(v, node)] for k, v in a.items()]}
    if isinstance(a, slice):
        return {"slice": [_to_data(a.start, node), _to_data(a.stop, node), _to_data(a.step, node)]}
    if isinstance(a, float) and not math.isfinite(a):
        return {"float": repr(a)}
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if isinstance(a, complex):
        return {"complex": [a.real, a.imag]}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, range):
        return {"range": [a.start, a.stop, a.step]}
    if isinstance(a, type) and _BUILTIN_TYPES.get(a.__name__) is a:
        return {"builtin": a.__name__}
    if isinstance(a, (np.dtype, type)):
        name = _DTYPE_NAMES.get(np.dtype(a)) if _is_dtype(a) else None
        if name is not None:
            return {"dtype": name}
    if isinstance(a, np.generic):
        return {"numpy": [str(a.dtype), _to_data(a.item(), node)]}
    if isinstance(a, Device):
        return {"device": str(a)}
    if callable(a):
        return {"function": _function_name(a)}
    raise CheckpointError(f"node {node.name!r}: an argument of type {type(a).__name__} cannot "
                          "be stored")


def _is_dtype(a: Any) -> bool:
    try:
        np.dtype(a)
    except TypeError:
        return False
    return True


# -- reading -------------------------------------------------------------------------------
def graph_from_data(data: Any, where: str, weights_only: bool) -> Graph:
    """The Graph ``data`` describes, every node checked (see the module's docstring)."""
    if not isinstance(data, dict) or data.get("version") != VERSION or \
            not isinstance(data.get("nodes"), list):
        raise CheckpointError(f"{where}: malformed graph description (version {VERSION} with "
                              "a list of nodes expected)")
    graph = Graph()
    by_name: dict[str, Node] = {}
    for entry in data["nodes"]:
        if not isinstance(entry, dict) or set(entry) != {"name", "op", "target", "args",
                                                         "kwargs"}:
            raise CheckpointError(f"{where}: malformed node {entry!r}")
        name, op = entry["name"], entry["op"]
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or keyword.iskeyword(name):
            raise CheckpointError(f"{where}: node name {name!r} is not an identifier")
        if op not in OPS:
            raise CheckpointError(f"{where}: node {name!r} has unknown op {op!r}")
        here = f"{where}: node {name!r}"
        target = _target_from_data(op, entry["target"], here, weights_only)
        args = _from_data(entry["args"], by_name, here, weights_only)
        kwargs = _from_data(entry["kwargs"], by_name, here, weights_only)
        if not isinstance(args, tuple) or not isinstance(kwargs, dict) or \
                not all(isinstance(k, str) and _IDENTIFIER.match(k) for k in kwargs):
            raise CheckpointError(f"{here}: malformed args or kwargs")
        _check_call(op, target, args, here)
        node = graph.create_node(op, target, args, kwargs, name=name)
        if node.name != name:
            raise CheckpointError(f"{here}: the name is used twice or reserved")
        by_name[name] = node
    outputs = [n for n in graph.nodes if n.op == "output"]
    if len(outputs) != 1 or outputs[0] is not list(graph.nodes)[-1]:
        raise CheckpointError(f"{where}: a graph ends with exactly one output node")
    return graph


def _target_from_data(op: str, target: Any, here: str, weights_only: bool) -> Any:
    if op == "call_function":
        if not isinstance(target, dict) or set(target) != {"function"}:
            raise CheckpointError(f"{here}: malformed function target {target!r}")
        return _resolve_function(target["function"], here, weights_only)
    if not isinstance(target, str):
        raise CheckpointError(f"{here}: the target of a {op} node is a string")
    if op == "placeholder" and not (_IDENTIFIER.match(target) and not keyword.iskeyword(target)):
        raise CheckpointError(f"{here}: placeholder {target!r} is not an identifier")
    if op == "call_method" and not _PUBLIC_NAME.match(target):
        raise CheckpointError(f"{here}: method {target!r} may not be called from a file (names "
                              "starting with '_' are refused)")
    if op in ("get_attr", "call_module") and not all(
            _PATH_PART.match(part) for part in target.split(".")):
        raise CheckpointError(f"{here}: malformed path {target!r}")
    if op == "output" and target != "output":
        raise CheckpointError(f"{here}: an output node's target is 'output'")
    return target


def _resolve_function(name: Any, here: str, weights_only: bool) -> Any:
    if not isinstance(name, str):
        raise CheckpointError(f"{here}: malformed function name {name!r}")
    from ._symbolic_trace import assert_specialized

    public = {qualified_name(fn): fn for fn in public_functions() if _loadable(fn)}
    public[qualified_name(assert_specialized)] = assert_specialized
    module, _, attribute = name.rpartition(".")
    found = public.get(name)
    if found is None and module == "operator":
        found = _SAFE_OPERATORS.get(attribute)
    elif found is None and module == "math" and not attribute.startswith("_"):
        found = getattr(math, attribute, None)
    elif found is None and not module:
        found = _SAFE_BUILTINS.get(attribute)
    if found is None:
        found = _allowed_function(name, here, weights_only)
    if not callable(found) or isinstance(found, type):
        raise CheckpointError(f"{here}: {name} is not a function")
    return found


def _allowed_function(name: str, here: str, weights_only: bool) -> Any:
    """A function the user allowed by name (``add_safe_globals``), or with ``weights_only=False``
    one of a module this process already imported. pullback's own default allow-list (what
    layers may hold) is not enough for a graph to call a function."""
    from pullback.serialization import UnsafeGlobalError, get_safe_globals, global_name

    if not weights_only:
        from pullback._safe_globals import resolve

        return resolve(name, False, here)
    allowed = {global_name(fn): fn for fn in get_safe_globals()}
    if name not in allowed:
        raise UnsafeGlobalError(
            f"{here} calls {name}, which weights_only loading does not allow; if the file is "
            f"trusted, allow it with pullback.serialization.add_safe_globals([{name}])")
    return allowed[name]


def _loadable(fn: Any) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.startswith(_LOADABLE_MODULES) and \
        qualified_name(fn).rpartition(".")[2] not in _NOT_LOADABLE


def _check_call(op: str, target: Any, args: tuple[Any, ...], here: str) -> None:
    if op == "call_method" and not (args and isinstance(args[0], Node)):
        raise CheckpointError(f"{here}: a method is called on a value of the graph")
    if op == "call_function" and target is getattr and not (
            len(args) == 2 and isinstance(args[1], str) and _PUBLIC_NAME.match(args[1])):
        raise CheckpointError(f"{here}: getattr of a name starting with '_' is refused")


def _from_data(a: Any, by_name: dict[str, Node], here: str, weights_only: bool) -> Any:
    if a is None or isinstance(a, (bool, int, float, str)):
        return a
    if isinstance(a, list):
        return [_from_data(x, by_name, here, weights_only) for x in a]
    if not isinstance(a, dict) or len(a) != 1:
        raise CheckpointError(f"{here}: malformed argument {a!r}")
    (tag, value), = a.items()
    if tag == "node":
        if value not in by_name:
            raise CheckpointError(f"{here}: reads {value!r}, which no earlier node defines")
        return by_name[value]
    if tag in ("tuple", "slice", "range", "complex", "dict", "numpy") and \
            not isinstance(value, list):
        raise CheckpointError(f"{here}: malformed {tag} {value!r}")
    if tag == "tuple":
        return tuple(_from_data(x, by_name, here, weights_only) for x in value)
    if tag == "dict":
        if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], (str, int))
                   for p in value):
            raise CheckpointError(f"{here}: malformed dict {value!r}")
        return {k: _from_data(v, by_name, here, weights_only) for k, v in value}
    if tag == "slice" and len(value) == 3:
        return slice(*(_from_data(x, by_name, here, weights_only) for x in value))
    if tag == "range" and len(value) == 3 and all(type(x) is int for x in value):
        return range(*value)
    if tag == "complex" and len(value) == 2 and all(type(x) in (int, float) for x in value):
        return complex(*value)
    if tag == "float" and value in ("inf", "-inf", "nan"):
        return float(value)
    if tag == "ellipsis" and value is True:
        return Ellipsis
    if tag == "builtin" and value in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[value]
    if tag == "dtype" and value in _DTYPES_BY_NAME:
        return _DTYPES_BY_NAME[value]
    if tag == "numpy" and len(value) == 2 and isinstance(value[0], str) and \
            value[0] in {str(d) for d in _DTYPE_NAMES} and type(value[1]) in (bool, int, float):
        return np.dtype(value[0]).type(value[1])
    if tag == "device" and isinstance(value, str):
        try:
            return Device(value)
        except Exception as exc:
            raise CheckpointError(f"{here}: malformed device {value!r}") from exc
    if tag == "function":
        return _resolve_function(value, here, weights_only)
    raise CheckpointError(f"{here}: malformed argument {a!r}")
