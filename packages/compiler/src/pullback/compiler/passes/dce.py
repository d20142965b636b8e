"""Dead-code elimination: drop nodes none of whose outputs is read.

Every op in a graph is pure (in-place writes are the graph's listed ``mutations``, not nodes), so
a node whose outputs reach neither another node nor a result can go. One backward walk suffices:
a node's readers all come after it.
"""

from __future__ import annotations

from .._ir import Graph, Value
from ._registry import graph_pass


@graph_pass("dce")
def dead_code_elimination(graph: Graph) -> Graph:
    """Remove the nodes whose outputs are never read."""
    live: set[Value] = set(graph.result_values())
    kept = []
    for node in reversed(graph.nodes):
        if any(v in live for v in node.outputs):
            kept.append(node)
            live.update(node.input_values())
    graph.nodes = kept[::-1]
    graph.constants = {v: a for v, a in graph.constants.items() if v in live}
    graph.constant_names = {v: n for v, n in graph.constant_names.items() if v in live}
    return graph
