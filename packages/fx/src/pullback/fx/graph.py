"""``Graph``: an ordered list of :class:`~pullback.fx.Node` objects (torch.fx's names and
semantics).

The nodes form a doubly linked list in program order; new nodes go at the *insertion point*
(the end unless ``inserting_before``/``inserting_after`` moved it). The Graph is plain data:
:meth:`Graph.python_code` turns it into the source of a ``forward`` (``_codegen.py``), and
:class:`~pullback.fx.GraphModule` runs that source.

Example:
    >>> import operator, pullback
    >>> from pullback.fx import Graph, GraphModule
    >>> graph = Graph()
    >>> x = graph.placeholder("x")
    >>> y = graph.call_function(pullback.relu, (graph.call_function(operator.add, (x, 1)),))
    >>> _ = graph.output(y)
    >>> print(GraphModule(pullback.nn.Module(), graph).code.strip())
    def forward(self, x):
        add = x + 1;  x = None
        relu = pullback.relu(add);  add = None
        return relu
"""

from __future__ import annotations

import copy
import inspect
from typing import TYPE_CHECKING, Any, Callable, Iterator

from ._names import Namespace, short_name
from .node import Argument, Node, Target, map_arg

if TYPE_CHECKING:
    from pullback.nn import Module

    from ._codegen import PythonCode

__all__ = ["Graph"]


class _NodeList:
    """The nodes of a graph in order (``graph.nodes``). Erasing the node being visited, or
    inserting after it, while iterating is allowed: iteration follows the links as they were
    when each node was reached."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        node = getattr(root, step)
        while node is not root:
            if not node._erased:
                yield node
            node = getattr(node, step)

    def __reversed__(self) -> _NodeList:
        return _NodeList(self._graph, not self._reverse)

    def __repr__(self) -> str:
        return repr(list(self))


class _InsertPoint:
    """Where new nodes go until it exits (the ``with graph.inserting_before(n):`` object); it
    takes effect when made, so it also works without ``with``."""

    def __init__(self, graph: Graph, insert: Callable[[Node], None]) -> None:
        self._graph = graph
        self._previous = graph._insert
        graph._insert = insert

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._graph._insert = self._previous


class Graph:
    """The program of a :class:`~pullback.fx.GraphModule`: placeholders (inputs), the
    operations, and one output node.

    Args:
        owning_module: the module whose submodules and attributes ``call_module`` and
            ``get_attr`` nodes name (set by GraphModule; ``lint`` checks the names against it).
        tracer_cls: the Tracer class that made it, kept for reference (as in torch).
    """

    def __init__(self, owning_module: Module | None = None, tracer_cls: type | None = None,
                 tracer_extras: dict[str, Any] | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._len = 0
        self._namespace = Namespace()
        self._insert: Callable[[Node], None] = self._root.prepend
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self) -> _NodeList:
        """The nodes in program order (``reversed(graph.nodes)`` walks them backwards)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Target | None = None) -> list[Node]:
        """The nodes with this ``op`` (and ``target`` when given), in order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- making nodes ----------------------------------------------------------------------
    def create_node(self, op: str, target: Target, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """Make a node at the insertion point and return it.

        Args:
            op: the kind of node (see :mod:`pullback.fx.node`).
            target: what it calls or reads.
            args, kwargs: its arguments; Nodes of this graph stand for their values.
            name: the base of its name (made unique); by default derived from ``target``.
            type_expr: an optional annotation of its value's type.
        """
        from ._interception import original

        if op == "call_function":
            target = original(target)  # never record the stand-in that tracing put in place
        candidate = name if name is not None else short_name(target)
        node = Node(self, self._namespace.create_name(candidate), op, target,
                    tuple(args) if args is not None else (), dict(kwargs or {}), type_expr)
        self._insert(node)
        self._len += 1
        return node

    def placeholder(self, name: str, type_expr: Any = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of ``forward`` called ``name`` (with a default value when given)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Read the owning module's attribute at ``qualified_name`` (``"fc.weight"``)."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, type_expr: Any = None) -> Node:
        """Call the owning module's submodule at ``module_name`` (``"layer1.0.conv1"``)."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple[Argument, ...] | None = None,
                    kwargs: dict[str, Argument] | None = None, type_expr: Any = None) -> Node:
        """Call method ``method_name`` of ``args[0]`` with the other arguments."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any],
                      args: tuple[Argument, ...] | None = None,
                      kwargs: dict[str, Argument] | None = None, type_expr: Any = None) -> Node:
        """Call ``the_function(*args, **kwargs)``."""
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """The output node: ``forward`` returns ``result`` (a node or a structure of them)."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda n: n
                  ) -> Node:
        """A copy of ``node`` (of any graph) in this one, its arguments mapped through
        ``arg_transform`` (which maps the other graph's nodes to this graph's)."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copied = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copied.meta = copy.copy(node.meta)
        return copied

    def graph_copy(self, g: Graph, val_map: dict[Node, Node],
                   return_output_node: bool = False) -> Argument:
        """Copy every node of ``g`` but its output into this graph; ``val_map`` maps ``g``'s
        nodes to the copies (filled in here; entries already there are used as they are).
        Returns the copied output value (or the output node itself, copied, when
        ``return_output_node``)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                result = map_arg(node.args[0], lambda n: val_map[n])
                return self.node_copy(node, lambda n: val_map[n]) if return_output_node \
                    else result
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict[int, Any]) -> Graph:
        copied = Graph(tracer_cls=self._tracer_cls, tracer_extras=self._tracer_extras)
        memo[id(self)] = copied
        copied.graph_copy(self, {}, return_output_node=True)
        return copied

    # -- changing the graph ----------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing reads any more."""
        if to_erase.graph is not self:
            raise RuntimeError(f"erase_node: node {to_erase.name!r} belongs to another graph")
        if to_erase._erased:
            raise RuntimeError(f"erase_node: node {to_erase.name!r} was already erased")
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: "
                               f"{dict(to_erase.users)}!")
        before, after = to_erase._prev, to_erase._next
        # the erased node keeps its own links, so that an iteration standing on it goes on
        before._next, after._prev = after, before
        to_erase._erased = True
        to_erase.args, to_erase.kwargs = (), {}
        self._len -= 1  # its name stays taken, as in torch.fx

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go right before ``n`` (at the start of the graph for ``None``)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise ValueError(f"inserting_before: node {n.name!r} belongs to another graph")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """New nodes go right after ``n`` (at the end of the graph for ``None``), each one
        after the previous."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise ValueError(f"inserting_after: node {n.name!r} belongs to another graph")
        return _InsertPoint(self, _AfterEachOther(n))

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None
                            ) -> bool:
        """Erase the nodes whose values nothing reads, last first (so that chains go too).
        Impure nodes stay (see :meth:`Node.is_impure`). Returns whether anything changed."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    # -- checking and showing --------------------------------------------------------------
    def lint(self) -> None:
        """Check the graph's invariants and raise ``RuntimeError`` naming the first node that
        breaks one: links, names, that every argument is a node of this graph defined before
        its use, that ``users`` match the arguments, one output node at the end, and (with an
        owning module) that ``call_module``/``get_attr`` targets exist."""
        seen: set[Node] = set()
        names: set[str] = set()
        outputs = 0
        for node in self.nodes:
            where = f"Graph.lint: node {node.name!r}"
            if node.graph is not self:
                raise RuntimeError(f"{where} does not belong to this graph")
            if node._next._prev is not node or node._prev._next is not node:
                raise RuntimeError(f"{where} has broken links")
            if node.name in names:
                raise RuntimeError(f"{where}: the name is used twice")
            names.add(node.name)
            if outputs:
                raise RuntimeError(f"{where} comes after the output node")
            for arg in node.all_input_nodes:
                if arg.graph is not self or arg._erased:
                    raise RuntimeError(f"{where} reads {arg.name!r}, which is not in the graph")
                if arg not in seen:
                    raise RuntimeError(f"{where} reads {arg.name!r} before it is defined")
                if node not in arg.users:
                    raise RuntimeError(f"{where} reads {arg.name!r} but is not among its users")
            for user in node.users:
                if node not in user._input_nodes:
                    raise RuntimeError(f"{where} lists {user.name!r} as a user, which does not "
                                       "read it")
            outputs += node.op == "output"
            seen.add(node)
            self._check_target(node)
        if len(seen) != self._len:
            raise RuntimeError(f"Graph.lint: {len(seen)} nodes are linked, {self._len} counted")

    def _check_target(self, node: Node) -> None:
        root = self.owning_module
        if root is None or node.op not in ("call_module", "get_attr"):
            return
        owner: Any = root
        for part in str(node.target).split("."):
            if not hasattr(owner, part):
                what = "module" if node.op == "call_module" else "attribute"
                raise RuntimeError(f"Graph.lint: node {node.name!r} names {what} "
                                   f"{node.target!r}, which the owning module does not have")
            owner = getattr(owner, part)

    def print_tabular(self) -> None:
        """Print the nodes as a table: opcode, name, target, args, kwargs (as torch's, with
        functions shown by their public names)."""
        from ._names import qualified_name

        rows = [[n.op, n.name,
                 qualified_name(n.target) if n.op == "call_function" else str(n.target),
                 str(n.args), str(dict(n.kwargs))] for n in self.nodes]
        print(_table(["opcode", "name", "target", "args", "kwargs"], rows))

    def python_code(self, root_module: str = "self") -> PythonCode:
        """The source of ``forward`` and the globals it runs with (see ``GraphModule.code``)."""
        from ._codegen import python_code

        return python_code(self, root_module)

    def __str__(self) -> str:
        lines = ["graph():"]
        lines.extend(f"    {node.format_node()}" for node in self.nodes)
        return "\n".join(lines)


class _AfterEachOther:
    """Insert each new node after the previous one, starting after ``anchor``."""

    def __init__(self, anchor: Node) -> None:
        self._last = anchor

    def __call__(self, node: Node) -> None:
        self._last.append(node)
        self._last = node


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """A plain-text table as tabulate's "simple" format draws it (torch's print_tabular uses
    tabulate): columns two spaces apart, at least two wider than their header, the header
    underlined with dashes."""
    widths = [max(len(h) + 2, *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)
    return "\n".join(lines)
