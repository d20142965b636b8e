"""Common-subexpression elimination: one node for each distinct (op, arguments, attributes).

Two nodes are the same computation when they apply the same op to the same values, the same
Python numbers (compared with their type and sign: ``0.0`` is not ``-0.0``, ``1`` is not ``1.0``)
and equal attributes. Ops are pure, so the later one's outputs are replaced by the earlier's.
Backward graphs repeat work (the same transpose of a weight, the same reshape of a gradient);
CSE keeps one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._ir import Graph, Value, resolve
from ._registry import graph_pass


def freeze(x: Any) -> Any:
    """A hashable key for an argument or attribute value, equal only for equal computations."""
    if isinstance(x, Value):
        return ("value", x.id)
    if isinstance(x, float):
        return ("float", repr(x))  # distinguishes -0.0 and 0.0; every NaN literal alike
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(freeze(e) for e in x))
    if isinstance(x, dict):
        return ("dict", tuple(sorted((k, freeze(v)) for k, v in x.items())))
    if isinstance(x, slice):
        return ("slice", freeze(x.start), freeze(x.stop), freeze(x.step))
    if isinstance(x, np.ndarray):
        return ("array", id(x))  # arrays in attributes (index keys) only by identity
    if isinstance(x, np.dtype):
        return ("dtype", x.str)
    try:
        hash(x)
    except TypeError:
        return ("object", id(x))
    return (type(x).__name__, x)


@graph_pass("cse")
def common_subexpression_elimination(graph: Graph) -> Graph:
    """Replace repeated computations by the first one."""
    seen: dict[Any, list[Value]] = {}
    mapping: dict[Value, Value] = {}
    kept = []
    for node in graph.nodes:
        if mapping:
            node.inputs = tuple(resolve(a, mapping) for a in node.inputs)
        key = (node.op, freeze(node.inputs), freeze(node.attrs), len(node.outputs))
        first = seen.get(key)
        if first is None:
            seen[key] = node.outputs
            kept.append(node)
        else:
            mapping.update(zip(node.outputs, first))
    graph.nodes = kept
    graph.substitute(mapping)
    return graph

