"""Constant folding: a node whose array arguments are all constants is computed at compile time.

Its outputs become constants of the graph, computed by the same kernel the replay would call, so
the result is exactly what running the node would give. Runtime scalars (an optimizer's step
size) are placeholders, not constants, and are never folded. Outputs larger than
:data:`MAX_FOLDED_ELEMENTS` are left to run time (folding would store them in the graph).
"""

from __future__ import annotations

from typing import Any

from .._executor import kernel_for
from .._ir import Graph, Value
from ._registry import graph_pass

MAX_FOLDED_ELEMENTS = 1 << 20


@graph_pass("constant_fold")
def constant_folding(graph: Graph) -> Graph:
    """Compute the nodes that depend on constants only."""
    from pullback.backends import get_backend

    asarray = get_backend(graph.device).xp.asarray
    kept = []
    for node in graph.nodes:
        values = list(node.input_values())
        if (not values or not all(v in graph.constants for v in values)
                or sum(v.size for v in node.outputs) > MAX_FOLDED_ELEMENTS):
            kept.append(node)
            continue
        kernel, takes_attrs = kernel_for(node, graph.device)
        args = [_bind(a, graph.constants) for a in node.inputs]
        result = kernel(*args, **(node.attrs if takes_attrs else {}))
        named = next((graph.constant_names[v] for v in values if v in graph.constant_names), None)
        for value, array in zip(node.outputs, _outputs(node, result)):
            graph.constants[value] = asarray(array)
            value.producer = None
            if named is not None:
                graph.constant_names[value] = f"{named}.{node.op}"
    graph.nodes = kept
    return graph


def _bind(a: Any, constants: dict[Value, Any]) -> Any:
    if a.__class__ is Value:
        return constants[a]
    if a.__class__ is tuple:
        return tuple(_bind(e, constants) for e in a)
    return a


def _outputs(node: Any, result: Any) -> list[Any]:
    if node.layout == "aux":
        return [result[0], *(s for s in result[1] if s is not None)][:len(node.outputs)]
    if isinstance(node.layout, tuple):
        return [result[p] for p in node.layout]
    return [result]
