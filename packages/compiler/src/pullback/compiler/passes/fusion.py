"""Elementwise fusion: chains of elementwise ops become one ``compiler.fused_elementwise`` node
(one generated C loop), and a trailing ``sum`` of such a chain is folded into its loop.

A node is fusible when its op has a ``"c_scalar"`` rule for its attributes, it has one float or
boolean output, and its arguments are Values (float32/float64/bool arrays that broadcast to the
output as a row, a column or one element) or Python numbers. Nodes join the group of one of
their producers when they compute at the same shape and every other argument they read was
computed before the group starts (so the group can run as one unit where its first node stood:
the order stays topological and no cycle can form). Groups of one node are left alone, but for
one large arithmetic op, which the C loop splits over the threads.

Only what is read outside the group (or is a result of the graph) is written to memory. Fused
arithmetic is exactly NumPy's (IEEE, no fast-math, no FMA contraction); transcendental functions
may differ from NumPy's by an ulp or two (see :mod:`pullback.compiler._c_rules`); a folded
``sum`` adds in double precision, in row order, instead of NumPy's pairwise float sum. The stated
tolerance is therefore: bit-identical for arithmetic-only groups without a sum, ``rtol=2e-6``
(float32) and ``1e-13`` (float64) per op otherwise (deep chains of transcendental ops compound
it, as any change of rounding would).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from pullback.registry import OPS

from .._fused import FusedKernel, FusedOp
from .._ir import Graph, Node, Value
from ._registry import graph_pass

FUSED_OP = "compiler.fused_elementwise"
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_BOOL = np.dtype(bool)


def _kind(shape: tuple[int, ...], out: tuple[int, ...], split: int | None) -> str | None:
    """How an input of ``shape`` is read at output shape ``out`` split at ``split``."""
    padded = (1,) * (len(out) - len(shape)) + tuple(shape)
    if len(padded) != len(out):
        return None
    if padded == out:
        return "full"
    if all(s == 1 for s in padded):
        return "one"
    if split is None:
        return None
    lead, trail = padded[:split], padded[split:]
    if all(s == 1 for s in lead) and trail == out[split:]:
        return "row"
    if lead == out[:split] and all(s == 1 for s in trail):
        return "col"
    return None


def _input_kind(v: Value, shape: tuple[int, ...], split: int | None) -> str:
    """How a fused loop split at ``split`` reads input ``v`` (its group checked it can)."""
    kind = "number" if v.weak else _kind(v.shape, shape, split)
    if kind is None:
        raise ValueError(f"%{v.id} of shape {v.shape} cannot be read at {shape} split {split}")
    return kind


def _splits(shape: tuple[int, ...], out: tuple[int, ...]) -> set[int | None]:
    """The splits at which an input can be read (None: the flat loop)."""
    return {k for k in (None, *range(1, len(out))) if _kind(shape, out, k) is not None}


def fusible(node: Node) -> bool:
    """Whether ``node`` can be part of a fused loop."""
    op = OPS.get(node.op)
    if op is None or "c_scalar" not in op.rules or node.layout is not None:
        return False
    if len(node.outputs) != 1:
        return False
    out = node.outputs[0]
    if out.dtype not in _FLOATS and out.dtype != _BOOL:
        return False
    floats = set()
    for a in node.inputs:
        if a.__class__ is Value:
            if a.weak:
                continue
            if a.dtype not in _FLOATS and a.dtype != _BOOL:
                return False
            if not _splits(a.shape, out.shape):
                return False
            if a.dtype in _FLOATS:
                floats.add(a.dtype)
        elif not isinstance(a, (bool, int, float)) or isinstance(a, np.ndarray):
            return False
    # one float type per op (casts convert between them: their C conversion rounds as NumPy)
    if node.op != "cast" and (len(floats) > 1
                              or (out.dtype in _FLOATS and floats and floats != {out.dtype})):
        return False
    compute = "double" if (floats or {out.dtype}) & {np.dtype(np.float64)} else "float"
    try:
        probe = op.rules["c_scalar"](["a"] * len(node.inputs), compute, **node.attrs)
    except TypeError:
        return False
    return probe is not None


@dataclass(eq=False)
class _Group:
    """A group being built: its members by node index, the indices of the nodes outside it that
    read its values (a heap; members are dropped from it lazily), the splits all its inputs
    allow, and a sum that closed it."""

    shape: tuple[int, ...]
    members: dict[int, Node] = field(default_factory=dict)
    readers: list[int] = field(default_factory=list)
    splits: set[int | None] = field(default_factory=set)
    reduce: Node | None = None

    @property
    def nodes(self) -> list[Node]:
        """The elementwise members in graph order (the folded sum excluded)."""
        return [self.members[k] for k in sorted(self.members) if self.members[k] is not self.reduce]

    def outside_readers(self) -> list[int]:
        while self.readers and self.readers[0] in self.members:
            heapq.heappop(self.readers)
        return self.readers

    def may_run_at(self, i: int) -> bool:
        """Whether the group may run where node ``i`` stands (no outsider reads it before)."""
        readers = self.outside_readers()
        return not readers or readers[0] >= i

    def add(self, i: int, node: Node, readers: list[int]) -> None:
        self.members[i] = node
        for r in readers:
            heapq.heappush(self.readers, r)

    def absorb(self, other: _Group) -> None:
        self.members.update(other.members)
        self.readers = list(heapq.merge(self.outside_readers(), other.outside_readers()))
        self.splits &= other.splits


def _reduction_start(node: Node, group: _Group) -> int | None:
    """Where a ``sum`` of the group's output over trailing axes starts, when the group's loop
    can run split there (rows kept, columns summed); None when it cannot be folded."""
    if node.op != "sum" or set(node.attrs) - {"axis", "keepdims"} or len(node.inputs) != 1:
        return None
    ndim = len(group.shape)
    axis = node.attrs.get("axis")
    axes = tuple(range(ndim)) if axis is None else tuple(
        a % ndim for a in ((axis,) if isinstance(axis, int) else axis))
    if not axes or sorted(axes) != list(range(ndim - len(axes), ndim)):
        return None
    start = ndim - len(axes)
    # full and one-element inputs (the flat loop's) can be read at any split
    return start if None in group.splits or start in group.splits else None


def _node_splits(node: Node) -> set[int | None]:
    out = node.outputs[0]
    splits: set[int | None] = {None, *range(1, len(out.shape))}
    for a in node.input_values():
        if not a.weak:
            splits &= _splits(a.shape, out.shape)
    return splits


@graph_pass("fuse_elementwise", exact=False)
def fuse_elementwise(graph: Graph) -> Graph:
    """Fuse elementwise chains (and a trailing sum of one) into generated C loops.

    A fused group runs where its last member stood. That is legal when no node outside the group
    reads a member's value before that point; a node joins (and merges) its producers' groups
    only while this stays true. Every dependency path from a group to a later node starts at
    such a reader, so no cycle can form.
    """
    users = graph.users()
    results = set(graph.result_values())
    end = len(graph.nodes)  # "read by the graph's results"
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    group_of: dict[Value, _Group] = {}
    for i, node in enumerate(graph.nodes):
        if node.op == "sum" and _fold_sum(node, i, group_of):
            continue
        if not fusible(node):
            continue
        readers = [index[id(u)] for v in node.outputs for u in users.get(v, [])]
        readers += [end] if any(v in results for v in node.outputs) else []
        out = node.outputs[0]
        splits = _node_splits(node)
        candidates = list({id(g): g for a in node.input_values()
                           if (g := group_of.get(a)) is not None and g.shape == out.shape
                           and g.reduce is None and g.may_run_at(i) and g.splits & splits
                           }.values())
        group = candidates[0] if candidates else _Group(out.shape, splits=set(splits))
        for other in candidates[1:]:
            if group.splits & other.splits & splits:
                group.absorb(other)
                for v in [v for v, g in group_of.items() if g is other]:
                    group_of[v] = group
        group.splits &= splits
        group.add(i, node, readers)
        group_of[out] = group
    groups = list({id(g): g for g in group_of.values()}.values())
    _rebuild(graph, groups, users, results)
    from ._recompute import drop_unread_outputs, recompute_fused_producers

    recompute_fused_producers(graph)
    drop_unread_outputs(graph)
    return graph


def as_fused(node: Node, users: dict[Value, list[Node]], results: set[Value]) -> Node | None:
    """``node`` itself when fused, a one-node fused loop of it when it is fusible, else None
    (for the passes after fusion that put a lone elementwise op into a loop of their own)."""
    if node.op == FUSED_OP:
        return node
    if not fusible(node):
        return None
    group = _Group(node.outputs[0].shape, {0: node}, splits=_node_splits(node))
    return _fused_node(group, users, results) if group.splits else None


def _fold_sum(node: Node, i: int, group_of: dict[Value, _Group]) -> bool:
    """Fold a trailing sum into the group of its input, when nothing else reads the group."""
    x = node.inputs[0] if node.inputs else None
    if not isinstance(x, Value) or x.dtype not in _FLOATS:
        return False
    group = group_of.get(x)
    if group is None or group.reduce is not None:
        return False
    start = _reduction_start(node, group)
    if start is None or any(r != i for r in group.outside_readers()):
        return False
    group.members[i] = node
    group.readers = []
    group.reduce, group.splits = node, {start}
    return True


def _rebuild(graph: Graph, groups: list[_Group], users: dict[Value, list[Node]],
             results: set[Value]) -> Graph:
    """The nodes with each group of two or more (or one large arithmetic node) replaced by
    its fused node, at its last place."""
    at: dict[int, _Group] = {}
    inside: set[int] = set()
    for g in groups:
        if len(g.members) >= 2 or _worth_a_loop_alone(g):
            at[max(g.members)] = g
            inside.update(g.members)
    nodes = []
    for i, node in enumerate(graph.nodes):
        if i in at:
            nodes.append(_fused_node(at[i], users, results))
        elif i not in inside:
            nodes.append(node)
    graph.nodes = nodes
    return graph


# One arithmetic op alone is NumPy's own loop on one core; as a C loop (the same IEEE
# operations, so the same bits) its rows are split over the threads, from the size at which the
# C thread pool splits a kernel. Transcendental ops alone stay NumPy's (their C versions may
# differ by an ulp).
_EXACT_ALONE = frozenset({"add", "sub", "mul", "div", "neg"})


def _worth_a_loop_alone(group: _Group) -> bool:
    from pullback import native

    (node,) = group.nodes
    return (node.op in _EXACT_ALONE and group.reduce is None
            and int(np.prod(group.shape, dtype=np.int64)) >= native.MIN_POOL_ELEMENTS)


def _fused_node(group: _Group, users: dict[Value, list[Node]], results: set[Value]) -> Node:
    members = set(id(n) for n in group.nodes)
    produced = {n.outputs[0]: j for j, n in enumerate(group.nodes)}
    inputs: list[Value] = []
    position: dict[Value, int] = {}
    ops = []
    for n in group.nodes:
        args = []
        for a in n.inputs:
            if a.__class__ is Value:
                if a in produced:
                    args.append(("tmp", produced[a]))
                else:
                    if a not in position:
                        position[a] = len(inputs)
                        inputs.append(a)
                    args.append(("in", position[a]))
            else:
                args.append(("lit", a))
        ops.append(FusedOp(n.op, tuple(args), dict(n.attrs), n.outputs[0].dtype))
    if group.reduce is not None:
        out_values = [group.reduce.outputs[0]]
        outputs = [produced[group.reduce.inputs[0]]]
    else:
        out_values = [n.outputs[0] for n in group.nodes
                      if n.outputs[0] in results
                      or any(id(u) not in members for u in users.get(n.outputs[0], []))]
        outputs = [produced[v] for v in out_values]
    split = _choose_split(group, inputs)
    kinds = [_input_kind(v, group.shape, split) for v in inputs]
    kernel = FusedKernel(ops, kinds, [None if v.weak else v.dtype for v in inputs], group.shape,
                         split, outputs,
                         reduce_from=None if group.reduce is None else next(iter(group.splits)),
                         keepdims=bool(group.reduce.attrs.get("keepdims", False))
                         if group.reduce is not None else False)
    node = Node(FUSED_OP, tuple(inputs), {"kernel": kernel}, list(out_values),
                layout=None if len(out_values) == 1 else tuple(range(len(out_values))),
                meta={"fused": [n.op for n in group.nodes]})
    for k, v in enumerate(out_values):
        v.producer, v.index = node, k
    return node


def _choose_split(group: _Group, inputs: list[Value]) -> int | None:
    """The flat loop when every input is full or one element; else the split with the longest
    inner loop."""
    if group.reduce is not None:
        return next(iter(group.splits))
    candidates = group.splits
    if None in candidates and all(v.weak or _kind(v.shape, group.shape, None) for v in inputs):
        return None
    return min(k for k in candidates if k is not None)
