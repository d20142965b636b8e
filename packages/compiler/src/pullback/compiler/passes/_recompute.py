"""Recomputation between fused loops, after fusion.

A fused loop that reads the values another fused loop computed (a backward reading its forward's
activations) recomputes them instead, when that reads fewer arrays: elementwise work is cheap
next to memory traffic, and the same C expressions give the same bits. Loops then stop writing
the values nothing reads any more.
"""

from __future__ import annotations

from .._fused import FusedKernel, FusedOp
from .._ir import Graph, Node, Value
from .fusion import FUSED_OP, _input_kind, _kind

MAX_RECOMPUTED_OPS = 4096


def recompute_fused_producers(graph: Graph) -> None:
    """Inline fused producers into the loops that read them, where that reads fewer arrays."""
    for node in graph.nodes:
        if node.op != FUSED_OP:
            continue
        while True:
            producer = _recomputable_producer(node)
            if producer is None:
                break
            _inline(producer, node)


def _recomputable_producer(node: Node) -> Node | None:
    """A fused producer of ``node``'s inputs worth recomputing inside it."""
    kernel: FusedKernel = node.attrs["kernel"]
    if kernel.reduce_from is not None and kernel.split != kernel.reduce_from:
        return None
    read: dict[int, list[Value]] = {}
    producers: dict[int, Node] = {}
    for v in node.inputs:
        p = v.producer if v.__class__ is Value else None
        if p is not None and p.op == FUSED_OP and p is not node:
            read.setdefault(id(p), []).append(v)
            producers[id(p)] = p
    for key, values in read.items():
        p = producers[key]
        pk: FusedKernel = p.attrs["kernel"]
        if pk.reduce_from is not None or pk.shape != kernel.shape:
            continue
        if len(pk.ops) + len(kernel.ops) > MAX_RECOMPUTED_OPS:
            continue
        new_inputs = [v for v in p.inputs if v not in node.inputs]
        if len(new_inputs) >= len(values):
            continue  # it would read as many arrays as it saves
        if any(not v.weak and _kind(v.shape, kernel.shape, kernel.split) is None
               for v in p.inputs):
            continue
        return p
    return None


def _inline(producer: Node, node: Node) -> None:
    """Put ``producer``'s ops in front of ``node``'s, reading ``producer``'s inputs."""
    pk: FusedKernel = producer.attrs["kernel"]
    kernel: FusedKernel = node.attrs["kernel"]
    inputs = list(node.inputs)
    position = {v: k for k, v in enumerate(inputs)}
    for v in producer.inputs:
        if v not in position:
            position[v] = len(inputs)
            inputs.append(v)
    remap_in = [position[v] for v in producer.inputs]
    ops = [FusedOp(op.op, tuple(("in", remap_in[r]) if k == "in" else (k, r) for k, r in op.args),
                   op.attrs, op.dtype) for op in pk.ops]
    computed = {v: pk.outputs[j] for j, v in enumerate(producer.outputs)}
    shift = len(ops)
    for op in kernel.ops:
        args = []
        for k, r in op.args:
            if k == "in" and inputs[r] in computed:
                args.append(("tmp", computed[inputs[r]]))
            elif k == "tmp":
                args.append(("tmp", r + shift))
            else:
                args.append((k, r))
        ops.append(FusedOp(op.op, tuple(args), op.attrs, op.dtype))
    # inputs that are now computed inside are dropped; the others keep their order
    keep = [k for k, v in enumerate(inputs) if v not in computed]
    renumber = {old: new for new, old in enumerate(keep)}
    for op in ops:
        op.args = tuple(("in", renumber[r]) if k == "in" else (k, r) for k, r in op.args)
    inputs = [inputs[k] for k in keep]
    kernel.ops = ops
    kernel.outputs = [o + shift for o in kernel.outputs]
    kernel.input_kinds = [_input_kind(v, kernel.shape, kernel.split) for v in inputs]
    kernel.input_dtypes = [None if v.weak else v.dtype for v in inputs]
    kernel._built, kernel._function, kernel._kernels = False, None, None
    node.inputs = tuple(inputs)


def drop_unread_outputs(graph: Graph) -> None:
    """Fused loops stop writing the values nothing reads any more (after recomputation)."""
    read = set(graph.result_values()) | {v for n in graph.nodes for v in n.input_values()}
    for node in graph.nodes:
        if node.op != FUSED_OP or all(v in read for v in node.outputs):
            continue
        kernel: FusedKernel = node.attrs["kernel"]
        kept = [(v, o) for v, o in zip(node.outputs, kernel.outputs) if v in read] or \
            [(node.outputs[0], kernel.outputs[0])]  # a dead node keeps one (DCE drops it)
        node.outputs = [v for v, _ in kept]
        kernel.outputs = [o for _, o in kept]
        kernel._built, kernel._function = False, None
        node.layout = None if len(kept) == 1 else tuple(range(len(kept)))
        for k, v in enumerate(node.outputs):
            v.index = k
