"""Python source for a Graph: the ``forward`` that :class:`~pullback.fx.GraphModule` runs.

One statement per node, named after it, in program order; operators come back as operators
(``x + 1``, ``x[0]``), functions by their public names (``pullback.relu``), other callables
through globals named after their module. Each value is released (``x = None``) right after
its last use, as torch.fx does, so that a long forward does not hold every intermediate.
"""

from __future__ import annotations

import builtins
import json
import math
import operator
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

import pullback

from ._names import MAGIC_OPERATORS, RESERVED, public_functions
from .node import Node

if TYPE_CHECKING:
    from .graph import Graph

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DTYPE_NAMES = {np.dtype(getattr(pullback, name)): name for name in (
    "float16", "float32", "float64", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
    "bool_")}


@dataclass
class PythonCode:
    """The generated ``forward``: its source and the globals it needs to run."""

    src: str
    globals: dict[str, Any]


class _Globals:
    """The global names of the generated code: the modules it names, and every other object
    it refers to under a name made from the object's module and name."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {"pullback": pullback, "operator": operator,
                                       "math": math, "numpy": np, "inf": math.inf,
                                       "nan": math.nan}
        self._names: dict[int, str] = {}

    def name_of(self, obj: Any) -> str:
        """A global name bound to ``obj`` (the same one each time)."""
        known = self._names.get(id(obj))
        if known is not None:
            return known
        module = getattr(obj, "__module__", None) or "obj"
        qualname = getattr(obj, "__qualname__", type(obj).__name__)
        # pullback's own helpers by their names; other code's as torch.fx spells them
        # (module, then name: __main___normalize)
        text = qualname if module.startswith("pullback.") else f"{module}_{qualname}"
        base = re.sub(r"[^0-9a-zA-Z_]", "_", text)
        name, number = base, 0
        while name in self.values or name in RESERVED:
            number += 1
            name = f"{base}_{number}"
        self.values[name] = obj
        self._names[id(obj)] = name
        return name


def python_code(graph: Graph, root_module: str) -> PythonCode:
    """The source of ``def forward(<root_module>, ...)`` for ``graph``, and its globals."""
    names = _Globals()
    last_users = _last_users(graph)
    params: list[str] = []
    body: list[str] = []
    for node in graph.nodes:
        if node.op == "placeholder":
            params.append(_parameter(node, names))
            if node.name != str(node.target).lstrip("*"):
                body.append(f"{node.name} = {str(node.target).lstrip('*')}")
            continue
        statement = _statement(node, root_module, names)
        released = [n.name for n in last_users.get(node, [])]
        if not node.users and node.op != "output":
            released.append(node.name)
        if released:
            statement += ";  " + " = ".join(released) + " = None"
        body.append(statement)
    if not any(n.op == "output" for n in graph.nodes):
        body.append("return None")
    signature = ", ".join([root_module, *params])
    src = f"def forward({signature}):\n" + "".join(f"    {line}\n" for line in body)
    return PythonCode(_wrap_calls(graph, names) + src, names.values)


def _wrap_calls(graph: Graph, names: _Globals) -> str:
    """``pullback.fx.wrap(...)`` for the wrapped functions the code calls, so that tracing
    the GraphModule again keeps them as calls (as torch.fx's code does)."""
    from ._symbolic_trace import is_wrapped

    wrapped = dict.fromkeys(_callable(n.target, names) for n in graph.nodes
                            if n.op == "call_function" and is_wrapped(n.target))
    return "".join(f'pullback.fx.wrap("{name}")\n' for name in wrapped) + \
        ("\n" if wrapped else "")


def _last_users(graph: Graph) -> dict[Node, list[Node]]:
    """node -> the values whose last read it is (in the order it reads them); the output
    node's values are never released."""
    seen: set[Node] = set()
    released: dict[Node, list[Node]] = {}
    for node in reversed(graph.nodes):
        if node.op == "output":
            seen.update(node.all_input_nodes)
            continue
        for value in node.all_input_nodes:
            if value not in seen:
                seen.add(value)
                released.setdefault(node, []).append(value)
    return released


def _parameter(node: Node, names: _Globals) -> str:
    target = str(node.target)
    if not _IDENTIFIER.match(target.lstrip("*")):
        raise ValueError(f"placeholder {node.name!r}: {target!r} is not a parameter name")
    if not node.args:
        return target
    return f"{target} = {_repr(node.args[0], names)}"


def _statement(node: Node, root: str, names: _Globals) -> str:
    args, kwargs = node.args, node.kwargs
    if node.op == "output":
        return f"return {_repr(args[0], names)}"
    if node.op == "get_attr":
        return f"{node.name} = {_attribute(root, str(node.target))}"
    if node.op == "call_module":
        return f"{node.name} = {_attribute(root, str(node.target))}({_call_args(args, kwargs, names)})"
    if node.op == "call_method":
        receiver = _repr(args[0], names)
        method = str(node.target)
        if not _IDENTIFIER.match(method):
            raise ValueError(f"call_method node {node.name!r}: {method!r} is not a method name")
        return f"{node.name} = {receiver}.{method}({_call_args(args[1:], kwargs, names)})"
    return f"{node.name} = {_function_call(node.target, args, kwargs, names)}"


def _function_call(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                   names: _Globals) -> str:
    syntax = MAGIC_OPERATORS.get(fn)
    if syntax is not None and not kwargs and syntax.count("{}") == len(args):
        shown = [_repr(a, names) for a in args]
        if fn is operator.getitem:
            return f"{shown[0]}[{shown[1]}]"
        return syntax.format(*shown)
    if (fn is getattr and len(args) == 2 and not kwargs and isinstance(args[1], str)
            and _IDENTIFIER.match(args[1])):
        return f"{_repr(args[0], names)}.{args[1]}"
    return f"{_callable(fn, names)}({_call_args(args, kwargs, names)})"


def _callable(fn: Any, names: _Globals) -> str:
    public = public_functions().get(fn)
    if public is not None:
        return public
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__name__", None)
    if name is not None and module in ("math", "operator", "_operator") \
            and getattr(operator if "operator" in module else math, name, None) is fn:
        return f"{'operator' if 'operator' in module else 'math'}.{name}"
    if name is not None and getattr(builtins, name, None) is fn:
        return name
    return names.name_of(fn)


def _call_args(args: tuple[Any, ...], kwargs: dict[str, Any], names: _Globals) -> str:
    shown = [_repr(a, names) for a in args]
    shown.extend(f"{k} = {_repr(v, names)}" for k, v in kwargs.items())
    return ", ".join(shown)


def _attribute(root: str, path: str) -> str:
    """``self.layer1.conv``, with ``getattr(..., "0")`` for parts that are no identifiers."""
    expression = root
    for part in path.split("."):
        expression = f"{expression}.{part}" if _IDENTIFIER.match(part) \
            else f"getattr({expression}, {json.dumps(part)})"
    return expression


def _repr(a: Any, names: _Globals) -> str:
    """Python source that evaluates to the argument ``a`` (Nodes by their names)."""
    if isinstance(a, Node):
        return a.name
    if isinstance(a, tuple):
        items = [_repr(x, names) for x in a]
        if hasattr(a, "_fields"):
            return f"{names.name_of(type(a))}({', '.join(items)})"
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(a, list):
        return "[" + ", ".join(_repr(x, names) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{_repr(k, names)}: {_repr(v, names)}"
                              for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({_repr(a.start, names)}, {_repr(a.stop, names)}, {_repr(a.step, names)})"
    if isinstance(a, float) and not math.isfinite(a):
        return "nan" if math.isnan(a) else ("inf" if a > 0 else "-inf")
    if a is None or a is Ellipsis or isinstance(a, (bool, int, float, complex, str, range)):
        return "..." if a is Ellipsis else repr(a)
    if isinstance(a, type) and getattr(builtins, a.__name__, None) is a:
        return a.__name__
    if isinstance(a, np.dtype) or (isinstance(a, type) and _is_dtype_class(a)):
        dtype_name = _DTYPE_NAMES.get(np.dtype(a))
        if dtype_name is not None:
            return f"pullback.{dtype_name}"
    if isinstance(a, np.generic):
        return f"numpy.{type(a).__name__}({_repr(a.item(), names)})"
    if isinstance(a, pullback.Device):
        return f"pullback.device({str(a)!r})"
    return names.name_of(a)


def _is_dtype_class(cls: type) -> bool:
    try:
        return np.dtype(cls) in _DTYPE_NAMES
    except TypeError:
        return False

