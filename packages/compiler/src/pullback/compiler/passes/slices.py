"""Slice gradients into one buffer: ``getitem_scatter(g1) + getitem_scatter(g2) + ...``, the
backward of cutting a tensor into slices that tile one axis (a fused q/k/v projection split in
three), becomes one ``compiler.scatter_slices`` node that writes each gradient into its part of
one buffer, instead of a zero-filled full-size array per slice and the sums between them.

Each element of the unfused sum is its slice's gradient plus zeros; the node writes ``g + 0.0``
(which turns ``-0.0`` into ``0.0`` exactly as those sums do), so the result is bit-identical.
Slices that overlap or leave gaps are left as they are.
"""

from __future__ import annotations

from .._ir import Graph, Node, Value
from ._registry import graph_pass

SCATTER = "getitem_scatter"
ASSEMBLED = "compiler.scatter_slices"


def _single(v: object, users: dict[Value, list[Node]], shape: tuple[int, ...]
            ) -> tuple[Value, object] | None:
    """(gradient, key) when ``v`` is a scatter into ``shape`` read only here."""
    if not isinstance(v, Value) or v.producer is None or len(users.get(v, [])) != 1:
        return None
    node = v.producer
    if node.op == SCATTER and tuple(node.attrs.get("shape", ())) == shape and \
            node.inputs[0].__class__ is Value:
        return node.inputs[0], node.attrs["key"]
    return None


def _sum_of(node: Node, users: dict[Value, list[Node]], shape: tuple[int, ...]
            ) -> list[tuple[Value, object]] | None:
    """The (gradient, key) pairs of a left-nested sum ``((s1 + s2) + s3) + ...`` of scatters
    (each two-term sum in either order: it commutes exactly), walked without recursion; a
    right-nested sum would add in another order where slices overlap, so it is left alone."""
    pairs: list[tuple[Value, object]] = []
    while True:
        if node.op != "add" or len(node.inputs) != 2:
            return None
        left, right = node.inputs
        last = _single(right, users, shape)
        rest = left
        if last is None:
            last, rest = _single(left, users, shape), right
        if last is None:
            return None
        pairs.append(last)
        first = _single(rest, users, shape)
        if first is not None:
            pairs.append(first)
            return pairs[::-1]
        if not isinstance(rest, Value) or rest.producer is None or \
                len(users.get(rest, [])) != 1:
            return None
        node = rest.producer


def tiles(keys: tuple[object, ...], shape: tuple[int, ...]) -> bool:
    """Whether the keys are step-1 slices of one axis that cover it exactly once."""
    spans = []
    for key in keys:
        if not isinstance(key, tuple) or len(key) != len(shape):
            return False
        cut = [(a, k) for a, k in enumerate(key) if k != slice(None)]
        if len(cut) != 1 or not isinstance(cut[0][1], slice):
            return False
        axis, piece = cut[0]
        start, stop, step = piece.indices(shape[axis])
        if step != 1:
            return False
        spans.append((axis, start, stop))
    axes = {a for a, _, _ in spans}
    if len(axes) != 1:
        return False
    (axis,) = axes
    edge = 0
    for _, start, stop in sorted(spans, key=lambda s: s[1]):
        if start != edge:
            return False
        edge = stop
    return edge == shape[axis]


@graph_pass("assemble_slices")
def assemble_slices(graph: Graph) -> Graph:
    """Replace sums of slice gradients by one buffer written slice by slice."""
    users = graph.users()
    for i, node in enumerate(graph.nodes):
        if node.op != "add" or len(node.inputs) != 2:
            continue
        out = node.outputs[0]
        pairs = _sum_of(node, users, out.shape)
        if pairs is None or any(g.dtype != out.dtype for g, _ in pairs):
            continue
        keys = tuple(k for _, k in pairs)
        if not tiles(keys, out.shape):
            continue
        assembled = Node(ASSEMBLED, tuple(g for g, _ in pairs),
                         {"keys": keys, "shape": out.shape}, [out], meta=node.meta)
        out.producer = assembled
        graph.nodes[i] = assembled
    return graph
