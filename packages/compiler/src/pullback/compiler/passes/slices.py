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


def _slices(v: object, users: dict[Value, list[Node]], shape: tuple[int, ...]
            ) -> list[tuple[Value, object]] | None:
    """The (gradient, key) pairs an add-tree of scatters into ``shape`` sums, in order."""
    if not isinstance(v, Value) or v.producer is None or len(users.get(v, [])) != 1:
        return None
    node = v.producer
    if node.op == SCATTER and tuple(node.attrs.get("shape", ())) == shape and \
            node.inputs[0].__class__ is Value:
        return [(node.inputs[0], node.attrs["key"])]
    if node.op == ASSEMBLED and tuple(node.attrs["shape"]) == shape:
        return list(zip(node.inputs, node.attrs["keys"]))
    if node.op == "add" and len(node.inputs) == 2:
        return _sum_of(node, users, shape)
    return None


def _sum_of(node: Node, users: dict[Value, list[Node]], shape: tuple[int, ...]
            ) -> list[tuple[Value, object]] | None:
    """The pairs of ``tree + one slice`` (either order: a two-term sum commutes exactly); a
    right-nested sum would add in another order where slices overlap, so it is left alone."""
    for tree, one in ((0, 1), (1, 0)):
        single = _slices(node.inputs[one], users, shape)
        if single is None or len(single) != 1:
            continue
        rest = _slices(node.inputs[tree], users, shape)
        if rest is not None:
            return rest + single
    return None


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
