"""``Proxy``: the value that flows through a traced ``forward`` in place of a Tensor, recording
what is done to it as Nodes (torch.fx's names and semantics).

Operators (``x + y``, ``x[0]``, ``-x``), methods (``x.view(...)``), attributes (``x.shape``) and
pullback's functions (``pullback.relu(x)``, ``F.linear(x, w)``: see ``_interception.py``) on a
Proxy each add a node to the tracer's graph and return a new Proxy. What Python itself must
decide from a value cannot be recorded: ``if x.sum() > 0:``, ``len(x)``, ``for row in x`` raise
:class:`TraceError` naming the line of user code that tried.
"""

from __future__ import annotations

import dis
import operator
import sys
import weakref
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from pullback.backends import Device

from . import _interception
from ._names import MAGIC_OPERATORS
from .graph import Graph
from .node import Argument, Node, Target

__all__ = ["Attribute", "GraphAppendingTracer", "ParameterProxy", "Proxy", "TraceError",
           "TracerBase"]

_FX_FOLDER = str(Path(__file__).resolve().parent)


class TraceError(ValueError):
    """Symbolic tracing met something it cannot record (control flow on a traced value,
    ``len()`` or iteration of one). The message ends with the user's line that did it."""


def _where() -> str:
    """The innermost line of code outside pullback.fx on the current stack, formatted as a
    traceback line (the user's line that made tracing fail)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_FX_FOLDER):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return ""
    import linecache

    source = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return (f'\n  File "{frame.f_code.co_filename}", line {frame.f_lineno}, in '
            f"{frame.f_code.co_name}" + (f"\n    {source}" if source else ""))


def trace_error(message: str) -> TraceError:
    """A TraceError with ``message`` and the user's line."""
    return TraceError(message + _where())


# What an argument of a node may hold besides Nodes and containers: constants the generated
# code can spell.
_CONSTANT_TYPES = (str, int, float, bool, complex, type(None), type(Ellipsis), range,
                   np.dtype, np.generic, Device, type)


class TracerBase:
    """What every tracer does: make nodes in ``self.graph`` and the Proxies that stand for
    them. :class:`~pullback.fx.Tracer` adds symbolic tracing of modules and functions;
    :class:`GraphAppendingTracer` only appends to an existing graph."""

    graph: Graph
    record_stack_traces: bool = False

    def create_node(self, kind: str, target: Target, args: tuple[Argument, ...],
                    kwargs: dict[str, Argument], name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Add a node to the graph (override to tag or reroute every recorded node)."""
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        """The Proxy that stands for ``node``."""
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Target, args: tuple[Any, ...],
                     kwargs: dict[str, Any], name: str | None = None, type_expr: Any = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Record one operation: its arguments through :meth:`create_arg`, a node through
        :meth:`create_node`, and return the node's Proxy."""
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs),
                                name, type_expr)
        if self.record_stack_traces and not node.stack_trace:
            node.stack_trace = _where().lstrip("\n")
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)

    def create_arg(self, a: Any) -> Argument:
        """Turn a value into an argument of a node: Proxies into their nodes, containers
        element by element, constants as they are.

        Raises:
            NotImplementedError: for a value a node cannot hold (the Tracer subclass adds
                Tensors and Parameters, as module attributes).
        """
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            items = tuple(self.create_arg(x) for x in a)
            return type(a)(*items) if hasattr(a, "_fields") else items
        if isinstance(a, list):
            return [self.create_arg(x) for x in a]
        if isinstance(a, dict):
            out = {}
            for key, value in a.items():
                if isinstance(key, (Proxy, Node)):
                    raise trace_error("a traced value cannot be a dict key")
                out[key] = self.create_arg(value)
            return out
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, _CONSTANT_TYPES):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """Called for ``bool(proxy)`` (``if``, ``while``, ``and``...): refused by default."""
        raise trace_error("symbolically traced variables cannot be used as inputs to control "
                          "flow")

    def iter(self, obj: Proxy) -> Iterator[Any]:
        """Called for iteration over a Proxy other than tuple unpacking: refused by default."""
        raise trace_error("Proxy object cannot be iterated. This can be attempted when the "
                          "Proxy is used in a loop or as a *args or **kwargs function argument. "
                          "See the pullback.fx docs (docs/fx.md) for the kinds of control flow "
                          "that can be traced")

    def keys(self, obj: Proxy) -> Any:
        """Called for ``**proxy``: records ``proxy.keys()``."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """A tracer that appends to an existing ``graph``: wrap its nodes in Proxies
    (``Proxy(node, tracer)``) and call functions, methods and modules on them to add nodes
    at the graph's insertion point.

    While one is alive, pullback's public functions record the calls that get a Proxy (see
    ``_interception.py``), so that ``pullback.cat([proxy, proxy])`` works outside tracing.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.scope = None
        _interception.tracer_started()
        weakref.finalize(self, _interception.tracer_finished)


class Proxy:
    """Stands for the value of ``node`` while ``tracer`` records what is done with it.

    Args:
        node: the node whose value this is.
        tracer: the tracer to record into; by default a :class:`GraphAppendingTracer` of the
            node's graph.
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, name: str) -> Attribute:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # Python's protocols (copy, NumPy...) are not recorded
        return Attribute(self, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __getitem__(self, index: Any) -> Proxy:
        return self.tracer.create_proxy("call_function", operator.getitem, (self, index), {})

    def __setitem__(self, index: Any, value: Any) -> None:
        self.tracer.create_proxy("call_function", operator.setitem, (self, index, value), {})

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call pullback.fx.wrap('len') at "
                           "module scope" + _where())

    def __iter__(self) -> Iterator[Any]:
        # ``a, b = proxy`` is tuple unpacking: the caller's next instruction says how many
        # values it takes, and each becomes ``proxy[i]``.
        caller = sys._getframe(1)
        for instruction in dis.get_instructions(caller.f_code):
            if instruction.offset == caller.f_lasti:
                if instruction.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(instruction.argval))
                break
        return self.tracer.iter(self)

    def keys(self) -> Any:
        """``proxy.keys()``, also what ``**proxy`` calls."""
        return self.tracer.keys(self)

    def __hash__(self) -> int:
        return id(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Proxy:
        raise trace_error(f"a Proxy ({self.node.name}) cannot be copied")


class Attribute(Proxy):
    """``proxy.name``: a ``getattr`` node when used as a value, a ``call_method`` node when
    called (``proxy.view(...)``)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property  # type: ignore[override]
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


class ParameterProxy(Proxy):
    """The Proxy of a parameter or buffer read with ``Tracer(param_shapes_constant=True)``:
    its shape, size, rank and element count are the real tensor's, so Python can branch on
    them while tracing."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param: Any) -> None:
        super().__init__(node, tracer)
        self.name = name
        self.param = param

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.param.shape)

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def size(self, dim: int | None = None) -> Any:
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    nelement = numel


def _binary(fn: Callable[..., Any], reflected: bool) -> Callable[..., Proxy]:
    if reflected:
        def method(self: Proxy, other: Any) -> Proxy:
            return self.tracer.create_proxy("call_function", fn, (other, self), {})
    else:
        def method(self: Proxy, other: Any) -> Proxy:
            return self.tracer.create_proxy("call_function", fn, (self, other), {})
    return method


def _unary(fn: Callable[..., Any]) -> Callable[..., Proxy]:
    def method(self: Proxy) -> Proxy:
        return self.tracer.create_proxy("call_function", fn, (self,), {})
    return method


_REFLECTABLE = {"add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift",
                "and_", "or_", "xor", "matmul"}
for _fn, _syntax in MAGIC_OPERATORS.items():
    _name = _fn.__name__.rstrip("_")
    if _fn is operator.getitem:
        continue
    if _syntax.count("{}") == 1:
        setattr(Proxy, f"__{_name}__", _unary(_fn))
        continue
    setattr(Proxy, f"__{_name}__", _binary(_fn, reflected=False))
    if _fn.__name__ in _REFLECTABLE:
        setattr(Proxy, f"__r{_name}__", _binary(_fn, reflected=True))
