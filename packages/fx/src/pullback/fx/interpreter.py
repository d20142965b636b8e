"""``Interpreter`` runs a graph one node at a time; ``Transformer`` runs it on Proxies to build
a new graph (torch.fx's names and semantics).

Each node kind has a method of the same name (``call_function(target, args, kwargs)``...):
override one to change how those nodes run (count calls, swap functions, profile modules),
and ``run_node`` to see every node.
"""

from __future__ import annotations

import inspect
from typing import Any, Iterator

from pullback.nn import Module

from . import _interception
from ._symbolic_trace import Tracer, tensor_paths
from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module``'s graph node by node.

    Args:
        module: the GraphModule (or a Module, with ``graph``) whose submodules and attributes
            the nodes name.
        garbage_collect_values: drop each value after its last use.
        graph: the graph to run (``module.graph`` by default).

    Example:
        >>> import pullback
        >>> from pullback.fx import Interpreter, symbolic_trace
        >>> class NegateRelu(Interpreter):
        ...     def call_function(self, target, args, kwargs):
        ...         if target is pullback.relu:
        ...             return -pullback.relu(*args)
        ...         return super().call_function(target, args, kwargs)
        >>> gm = symbolic_trace(lambda x: pullback.relu(x))
        >>> NegateRelu(gm).run(pullback.tensor([-1.0, 2.0]))
        tensor([-0., -2.])
    """

    def __init__(self, module: Module, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph: Graph = graph if graph is not None else module.graph  # type: ignore[assignment]
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.args_iter: Iterator[Any] = iter(())
        # node -> the values whose last read it is
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        seen: set[Node] = set()
        for node in reversed(self.graph.nodes):
            for value in node.all_input_nodes:
                if value not in seen:
                    seen.add(value)
                    self.user_to_last_uses.setdefault(node, []).append(value)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args`` and return what its output node returns.

        Args:
            args: the placeholders' values, in order.
            initial_env: values of nodes already known (they are not run).
            enable_io_processing: accepted for torch's signature (inputs and outputs are
                used as they are).
        """
        self.env = dict(initial_env) if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            self.env[node] = self.run_node(node)
            if self.garbage_collect_values:
                for value in self.user_to_last_uses.get(node, ()):
                    del self.env[value]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments' values, call the method named after its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(_interception.presented(n.target), args, kwargs)

    # -- one method per kind of node ---------------------------------------------------------
    def placeholder(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The next argument of ``run`` (or the placeholder's default)."""
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               "was not passed in!") from None

    def get_attr(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The module's attribute at the dotted path ``target``."""
        return self.fetch_attr(str(target))

    def call_function(self, target: Target, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        """``target(*args, **kwargs)``."""
        return target(*args, **kwargs)  # type: ignore[operator]

    def call_method(self, target: Target, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """``args[0].<target>(*args[1:], **kwargs)``."""
        receiver, *rest = args
        return getattr(receiver, str(target))(*rest, **kwargs)

    def call_module(self, target: Target, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> Any:
        """The submodule at ``target`` called on the arguments."""
        return self.fetch_attr(str(target))(*args, **kwargs)

    def output(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The graph's result, ``args[0]``."""
        return args[0]

    # -- helpers -------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """The object at the dotted path ``target`` of the module."""
        owner: Any = self.module
        for i, part in enumerate(target.split(".")):
            if not hasattr(owner, part):
                walked = ".".join(target.split(".")[:i + 1])
                raise RuntimeError(f"Node referenced nonexistent target {walked}")
            owner = getattr(owner, part)
        return owner

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``n``'s args and kwargs with each Node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Any:
        """``args`` with each Node replaced by its value (computed earlier in this run)."""
        def value(node: Node) -> Any:
            if node not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {node}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[node]

        return map_arg(args, value)


class _TransformerTracer(Tracer):
    """Records into the Transformer's new graph; every module call stays one call."""

    def __init__(self, graph: Graph, root: Module) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self.submodule_paths = {m: name for name, m in root.named_modules()}
        self.tensor_attrs = tensor_paths(root)

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Runs a graph on Proxies, so that what each method returns is recorded into a new
    graph; :meth:`transform` returns it as a GraphModule. Override ``call_function`` & co.
    to rewrite nodes (return ``self.tracer.create_proxy(...)`` or call functions on the
    Proxies)."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> Proxy:
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(str(target), default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any]
                 ) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target: Target, args: tuple[Any, ...],
                      kwargs: dict[str, Any]) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_module(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any]
                    ) -> Any:
        submodule = self.fetch_attr(str(target))
        return self.tracer.call_module(submodule, submodule.forward, args, kwargs)

    def transform(self) -> GraphModule:
        """Run the transformation and return the new GraphModule."""
        _interception.tracer_started()
        try:
            result = self.run()
        finally:
            _interception.tracer_finished()
        if result is not None:
            self.new_graph.output(self.tracer.create_arg(result))
        return GraphModule(self.module, self.new_graph)
