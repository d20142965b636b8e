"""``replace_pattern``: find every occurrence of a small program in a GraphModule's graph and
put another one in its place (torch.fx's names and semantics).

The pattern and the replacement are functions (or GraphModules), traced with
:func:`~pullback.fx.symbolic_trace`. A match is found by data dependencies, not by names:
starting from each node of the graph, the pattern's output is compared node by node with what
the graph computes (same op and target, arguments alike), and the pattern's inputs bind to
whatever values the graph feeds there. Matches never overlap, and a match whose inner values
are read outside it is skipped (replacing it would change those readers).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from pullback.nn import Module

from .graph import Graph
from .graph_module import GraphModule, _copy_attr
from .node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    """One replaced occurrence: ``anchor`` is the pattern's node the match started from (its
    output value), ``nodes_map`` maps each pattern node to the graph node (or value) it
    matched."""

    anchor: Node
    nodes_map: dict[Node, Any]


def _graph_of(program: Callable[..., Any] | Graph | GraphModule) -> tuple[Graph, Module | None]:
    if isinstance(program, GraphModule):
        return program.graph, program
    if isinstance(program, Graph):
        return program, program.owning_module
    from ._symbolic_trace import symbolic_trace

    traced = symbolic_trace(program)
    return traced.graph, traced


def _pattern_output(graph: Graph) -> Node:
    output = next(n for n in graph.nodes if n.op == "output")
    result = output.args[0]
    if not isinstance(result, Node):
        raise ValueError("replace_pattern: the pattern must return one traced value (found "
                         f"{result!r})")
    return result


class _Matcher:
    """Matches the pattern rooted at one output node against the graph, node by node."""

    def __init__(self, pattern_output: Node, taken: set[Node]) -> None:
        self.pattern_output = pattern_output
        self.taken = taken  # graph nodes already inside an earlier match

    def match_at(self, anchor: Node) -> dict[Node, Any] | None:
        nodes_map: dict[Node, Any] = {}
        if not self._match_node(self.pattern_output, anchor, nodes_map):
            return None
        inner = [g for p, g in nodes_map.items() if p.op != "placeholder"]
        if any(g in self.taken for g in inner):
            return None
        inner_set = set(inner)
        for node in inner:  # the match's values may only be read inside it (or be its output)
            if node is not anchor and any(user not in inner_set for user in node.users):
                return None
        return nodes_map

    def _match_node(self, p: Node, g: Any, nodes_map: dict[Node, Any]) -> bool:
        if p in nodes_map:
            bound = nodes_map[p]
            return bound is g if isinstance(g, Node) or isinstance(bound, Node) else bound == g
        if p.op == "placeholder":
            nodes_map[p] = g
            return True
        if not isinstance(g, Node) or g.op != p.op or g.target != p.target:
            return False
        if len(g.args) != len(p.args) or set(g.kwargs) != set(p.kwargs):
            return False
        nodes_map[p] = g
        matched = all(self._match_arg(pa, ga, nodes_map) for pa, ga in zip(p.args, g.args)) \
            and all(self._match_arg(p.kwargs[k], g.kwargs[k], nodes_map) for k in p.kwargs)
        if not matched:
            del nodes_map[p]
        return matched

    def _match_arg(self, pa: Any, ga: Any, nodes_map: dict[Node, Any]) -> bool:
        if isinstance(pa, Node):
            return self._match_node(pa, ga, nodes_map)
        if isinstance(pa, (tuple, list)):
            return (isinstance(ga, (tuple, list)) and len(pa) == len(ga)
                    and all(self._match_arg(a, b, nodes_map) for a, b in zip(pa, ga)))
        if isinstance(pa, dict):
            return (isinstance(ga, dict) and set(pa) == set(ga)
                    and all(self._match_arg(pa[k], ga[k], nodes_map) for k in pa))
        return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga


def replace_pattern(gm: GraphModule, pattern: Callable[..., Any] | Graph | GraphModule,
                    replacement: Callable[..., Any] | Graph | GraphModule) -> list[Match]:
    """Replace every non-overlapping occurrence of ``pattern`` in ``gm`` by ``replacement``
    and recompile ``gm``.

    ``pattern`` and ``replacement`` take the same inputs, in the same order; ``pattern``
    returns one value. The replacement's nodes go where the occurrence's output was.

    Example:
        >>> import pullback
        >>> from pullback.fx import symbolic_trace, replace_pattern
        >>> gm = symbolic_trace(lambda x, y: pullback.relu(pullback.neg(x)) + y)
        >>> def pattern(a):
        ...     return pullback.relu(pullback.neg(a))
        >>> def replacement(a):
        ...     return pullback.clamp(a, max=0.0).neg()
        >>> len(replace_pattern(gm, pattern, replacement))
        1
        >>> print(gm.code.strip())
        def forward(self, x, y):
            clamp = pullback.clamp(x, max = 0.0);  x = None
            neg_1 = clamp.neg();  clamp = None
            add = neg_1 + y;  neg_1 = y = None
            return add

    Returns:
        The :class:`Match` of each replaced occurrence, in graph order.
    """
    pattern_graph, _ = _graph_of(pattern)
    replacement_graph, replacement_module = _graph_of(replacement)
    pattern_inputs = [n for n in pattern_graph.nodes if n.op == "placeholder"]
    replacement_inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(pattern_inputs) != len(replacement_inputs):
        raise ValueError(f"replace_pattern: the pattern takes {len(pattern_inputs)} inputs, the "
                         f"replacement {len(replacement_inputs)}")
    taken: set[Node] = set()
    anchor = _pattern_output(pattern_graph)
    matcher = _Matcher(anchor, taken)
    matches = []
    for node in list(gm.graph.nodes):
        if node in taken or node.op in ("placeholder", "output"):
            continue
        nodes_map = matcher.match_at(node)
        if nodes_map is not None:
            taken.update(g for p, g in nodes_map.items() if p.op != "placeholder")
            matches.append(Match(anchor, nodes_map))
    graph = gm.graph
    for match in matches:
        values = {r: match.nodes_map.get(p) for p, r in zip(pattern_inputs, replacement_inputs)}
        replaced = match.nodes_map[anchor]
        # where the replaced output was first read (as torch does)
        first_user = _first_user(replaced)
        with graph.inserting_before(first_user) if first_user is not None \
                else graph.inserting_after(replaced):
            result = graph.graph_copy(replacement_graph, dict(values))
        _copy_used_attributes(replacement_graph, replacement_module, gm)
        if not isinstance(result, Node):
            raise ValueError("replace_pattern: the replacement must return one traced value")
        replaced.replace_all_uses_with(result)
        for p in reversed(list(pattern_graph.nodes)):
            g = match.nodes_map.get(p)
            if p.op not in ("placeholder", "output") and isinstance(g, Node) and not g.users:
                graph.erase_node(g)
    gm.recompile()
    return matches


def _first_user(node: Node) -> Node | None:
    """The first node after ``node`` that reads it (None: the end of the graph)."""
    candidate = node.next
    while candidate.op != "root":
        if candidate in node.users:
            return candidate
        candidate = candidate.next
    return None


def _copy_used_attributes(graph: Graph, owner: Module | None, gm: GraphModule) -> None:
    """The submodules and attributes the replacement reads, copied into ``gm`` where it has
    none of its own under that name."""
    if owner is None:
        return
    for node in graph.nodes:
        if node.op in ("get_attr", "call_module"):
            try:
                gm.get_submodule(str(node.target)) if node.op == "call_module" else \
                    _attribute(gm, str(node.target))
            except AttributeError:
                _copy_attr(owner, gm, str(node.target))


def _attribute(module: Module, path: str) -> Any:
    owner: Any = module
    for part in path.split("."):
        owner = getattr(owner, part)
    return owner
