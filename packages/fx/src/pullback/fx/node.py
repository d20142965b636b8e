"""``Node``: one operation of a :class:`~pullback.fx.Graph` (torch.fx's names and semantics).

A node is plain data: what it does (``op`` and ``target``), what it reads (``args`` and
``kwargs``, which may hold other nodes anywhere inside tuples, lists, dicts and slices), and who
reads it (``users``). The six kinds of ``op``:

=================  ==============================  ==========================================
``op``             ``target``                      meaning
=================  ==============================  ==========================================
``placeholder``    the argument's name             an input of ``forward``
``get_attr``       a dotted path (``"fc.weight"``)  a parameter, buffer or constant of the module
``call_function``  the function                    ``target(*args, **kwargs)``
``call_method``    the method's name               ``args[0].target(*args[1:], **kwargs)``
``call_module``    a dotted path (``"layer1.0"``)   the submodule called on ``args``/``kwargs``
``output``         ``"output"``                    what ``forward`` returns (``args[0]``)
=================  ==============================  ==========================================
"""

from __future__ import annotations

import collections.abc
import operator
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from .immutable_collections import immutable_dict, immutable_list

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Argument", "Node", "Target", "has_side_effect", "map_aggregate", "map_arg"]

# torch.fx's aliases, spelled as torch spells them (``Target`` a ``|`` union, ``Argument`` an
# Optional): code that inspects them sees the same kinds of object.
Target = collections.abc.Callable[..., Any] | str
Argument = Optional[Union[tuple["Argument", ...], collections.abc.Sequence["Argument"],
                          collections.abc.Mapping[str, "Argument"], slice, range, "Node", str,
                          int, float, bool, complex]]  # a Node, a number, ... or containers

OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")
_STRING_TARGETS = {"placeholder", "get_attr", "call_method", "call_module", "output"}

# Functions whose calls dead-code elimination keeps even when nothing reads their result.
_side_effectful_functions: set[Callable[..., Any]] = {operator.setitem}


def has_side_effect(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``fn`` as having side effects: ``eliminate_dead_code`` keeps its unused calls.
    Returns ``fn`` (usable as a decorator)."""
    _side_effectful_functions.add(fn)
    return fn


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a``, rebuilding its tuples (named tuples too), lists,
    dicts and slices; lists and dicts come back read-only (a Node's containers)."""
    if isinstance(a, tuple):
        items = tuple(map_aggregate(x, fn) for x in a)
        return type(a)(*items) if hasattr(a, "_fields") else items
    if isinstance(a, list):
        return immutable_list(map_aggregate(x, fn) for x in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every Node inside ``a`` (other leaves stay as they are)."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _nodes_in(a: Argument) -> list[Node]:
    found: list[Node] = []
    map_arg(a, found.append)
    return found


class Node:
    """One operation of a Graph. Make nodes with the Graph's methods (``graph.call_function``,
    ``graph.create_node``...), not directly.

    Attributes:
        graph: the Graph it belongs to.
        name: its unique name in the graph (the variable in the generated code).
        op: one of ``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
            ``call_module``, ``output``.
        target: what it calls or reads (see the module's table).
        users: the nodes that read this one (a dict used as an ordered set).
        type: an optional annotation of its value's type.
        meta: free-form metadata for passes (``ShapeProp`` puts ``tensor_meta`` here).
    """

    def __init__(self, graph: Graph, name: str, op: str, target: Target, args: tuple[Any, ...],
                 kwargs: dict[str, Any], return_type: Any = None) -> None:
        if op not in OPS and op != "root":
            raise ValueError(f"Node: unknown op {op!r} (one of {', '.join(OPS)})")
        if op in _STRING_TARGETS and not isinstance(target, str):
            raise TypeError(f"Node {name!r}: the target of a {op} node is a string, got "
                            f"{type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise TypeError(f"Node {name!r}: the target of a call_function node is a callable, "
                            f"got {type(target).__name__}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self.type = return_type
        self.meta: dict[str, Any] = {}
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self._args: tuple[Any, ...] = ()
        self._kwargs: dict[str, Any] = immutable_dict()
        self._set_args_kwargs(args, kwargs)

    # -- what it reads ---------------------------------------------------------------------
    @property
    def args(self) -> tuple[Any, ...]:
        """The positional arguments (Nodes stand for the values they compute). Assigning
        updates the uses."""
        return self._args

    @args.setter
    def args(self, value: tuple[Any, ...]) -> None:
        self._set_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments. Assigning updates the uses."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict[str, Any]) -> None:
        self._set_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        """Every Node this one reads, each once, in the order of first appearance."""
        return list(self._input_nodes)

    def _set_args_kwargs(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not isinstance(args, tuple):
            raise TypeError(f"Node {self.name!r}: args must be a tuple, got "
                            f"{type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"Node {self.name!r}: kwargs must be a dict, got "
                            f"{type(kwargs).__name__}")
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._args = map_aggregate(args, lambda x: x)
        self._kwargs = map_aggregate(kwargs, lambda x: x)
        self._input_nodes = {}
        for node in _nodes_in((self._args, self._kwargs)):
            if node.graph is not self.graph:
                raise ValueError(f"Node {self.name!r} would read {node.name!r}, a node of "
                                 "another graph")
            self._input_nodes.setdefault(node)
        for node in self._input_nodes:
            node.users.setdefault(self)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set positional argument ``idx`` to ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set keyword argument ``key`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_input_with(self, old_input: Node, new_input: Argument) -> None:
        """Read ``new_input`` wherever this node read ``old_input``."""
        def swap(n: Node) -> Argument:
            return new_input if n is old_input else n

        self._set_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] = lambda user: True, *,
                              propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead.

        Args:
            replace_with: the node to read instead.
            delete_user_cb: which users to change (all by default).
            propagate_meta: copy this node's ``meta`` into ``replace_with`` (which must have
                none of its own).

        Returns:
            The users that were changed.
        """
        if propagate_meta:
            if replace_with.meta:
                raise ValueError(f"replace_all_uses_with(propagate_meta=True): "
                                 f"{replace_with.name!r} already has meta")
            replace_with.meta.update(self.meta)
        changed = [user for user in list(self.users) if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    # -- position in the graph -----------------------------------------------------------
    @property
    def next(self) -> Node:
        """The node after this one (the graph's root sentinel after the last)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move (or insert) ``x`` right before this node."""
        if x is self:
            raise ValueError(f"cannot put node {self.name!r} before itself")
        if x.graph is not self.graph:
            raise ValueError(f"node {x.name!r} belongs to another graph")
        x._remove_from_list()
        before = self._prev
        before._next, x._prev = x, before
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Move (or insert) ``x`` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        before, after = self._prev, self._next
        before._next, after._prev = after, before
        self._prev = self._next = self

    # -- description -----------------------------------------------------------------------
    @property
    def stack_trace(self) -> str | None:
        """Where in the user's code this node was recorded (when the tracer kept it)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self) -> bool:
        """Whether the node must stay even when nothing reads it: inputs, the output, calls
        of functions marked with :func:`has_side_effect`, in-place methods (``add_``), and
        calls of modules whose class sets ``_is_impure``."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions
        if self.op == "call_method":
            name = str(self.target)
            return name.endswith("_") and not name.endswith("__")
        if self.op == "call_module":
            root = self.graph.owning_module
            if root is None:
                return False
            return bool(getattr(root.get_submodule(str(self.target)), "_is_impure", False))
        return False

    def format_node(self) -> str:
        """One line describing the node, as ``print(graph)`` shows it::

            %add : [num_users=1] = call_function[target=operator.add](args = (%x, 1), kwargs = {})
        """
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = "
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}get_attr[target={self.target}]"
        if self.op == "output":
            return f"return {self.args[0]}"
        target = _describe_target(self.target) if self.op == "call_function" else self.target
        return (f"{head}{self.op}[target={target}](args = {_format_arg(self.args)}, "
                f"kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name


def _format_arg(a: Argument) -> str:
    if isinstance(a, Node):
        return f"%{a.name}"
    if isinstance(a, tuple):
        inner = ", ".join(_format_arg(x) for x in a)
        return f"({inner},)" if len(a) == 1 else f"({inner})"
    if isinstance(a, list):
        return "[" + ", ".join(_format_arg(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in a.items()) + "}"
    return repr(a)


def _describe_target(target: Target) -> str:
    """``operator.add``, ``pullback.relu``: the public name of a function where it has one."""
    from ._names import qualified_name

    return qualified_name(target) if callable(target) else str(target)


def _type_repr(t: Any) -> str:
    return t.__qualname__ if isinstance(t, type) else repr(t)


