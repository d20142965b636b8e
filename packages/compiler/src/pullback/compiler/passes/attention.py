"""Attention's gradients straight into the packed QKV gradient: where a fused q/k/v projection
is cut into heads, its gradient is ``compiler.scatter_slices`` (from ``assemble_slices``) of the
three head gradients of ``nn.scaled_dot_product_attention_backward``, each merged back by
``permute(0, 2, 1, 3)`` and ``reshape(B, T, H * D)``. This pass makes that one
``compiler.attention_backward_packed`` node, whose kernel writes the three gradients into the
column blocks of the buffer: one pass over 3 x B x T x H x D elements fewer. On the benchmark GPT's
layer (batch 32 x 64, width 128, 4 heads) the packed backward takes 0.64-0.87x the time of the
backward and the assembly (``python benchmarks/gpt_step_kernels.py``).

Exact: the kernel computes the same values and writes them as ``scatter_slices`` does (``g +
0.0``, so a ``-0.0`` becomes ``0.0``). Every intermediate must be read only on this path; other
cuts, orders or uses leave the graph as it is.
"""

from __future__ import annotations

from typing import Any

from .._ir import Graph, Node, Value
from .._native_slices import column_range
from ._registry import graph_pass
from .slices import ASSEMBLED

BACKWARD = "nn.scaled_dot_product_attention_backward"
PACKED = "compiler.attention_backward_packed"
_MERGE_AXES = (0, 2, 1, 3)


def _only_reader(v: Any, users: dict[Value, list[Node]], results: set[Value]) -> Node | None:
    """The producer of ``v`` when ``v`` is a Value read by one node only and is no result of
    the graph (which its caller reads)."""
    if v.__class__ is not Value or v.producer is None or len(users.get(v, [])) != 1 \
            or v in results:
        return None
    return v.producer


def _head_gradient(r: Any, users: dict[Value, list[Node]], results: set[Value]
                   ) -> tuple[Node, int] | None:
    """``(backward node, output index)`` when ``r`` is ``reshape(permute(o, (0, 2, 1, 3)),
    (B, T, H * D))`` of output ``o`` of an attention backward, each read only on this path."""
    reshape = _only_reader(r, users, results)
    if reshape is None or reshape.op != "reshape":
        return None
    permuted = reshape.inputs[0]
    permute = _only_reader(permuted, users, results)
    if permute is None or permute.op != "permute" or \
            tuple(permute.attrs.get("axes", ())) != _MERGE_AXES:
        return None
    o = permute.inputs[0]
    backward = _only_reader(o, users, results)
    if backward is None or backward.op != BACKWARD or o.ndim != 4:
        return None
    b, h, t, d = o.shape
    if tuple(r.shape) != (b, t, h * d):
        return None
    return backward, backward.outputs.index(o)


def _packed(node: Node, users: dict[Value, list[Node]], results: set[Value]) -> Node | None:
    """The packed node that replaces the ``scatter_slices`` ``node``, or ``None``."""
    out = node.outputs[0]
    if len(node.inputs) != 3 or out.ndim != 3:
        return None
    found = [_head_gradient(r, users, results) for r in node.inputs]
    if any(f is None for f in found):
        return None
    backwards = {id(f[0]) for f in found}  # type: ignore[index]
    positions = sorted(f[1] for f in found)  # type: ignore[index]
    if len(backwards) != 1 or positions != [0, 1, 2]:
        return None
    backward = found[0][0]  # type: ignore[index]
    operands = backward.inputs[:5]
    if len(backward.inputs) != 5 or any(
            v.__class__ is not Value or v.ndim != 4 or v.dtype != out.dtype for v in operands):
        return None
    starts: list[int] = [0, 0, 0]
    for (_, position), key in zip(found, node.attrs["keys"]):  # type: ignore[misc]
        columns = column_range(key, 3, out.shape[-1])
        if columns is None:
            return None
        starts[position] = columns[0]
    return Node(PACKED, tuple(operands),
                {"scale": backward.attrs["scale"], "causal": backward.attrs["causal"],
                 "starts": tuple(starts), "shape": tuple(out.shape)}, [out],
                meta=backward.meta)


@graph_pass("pack_attention_grads")
def pack_attention_grads(graph: Graph) -> Graph:
    """Replace assembled head gradients of an attention backward by one packed node (the
    intermediate nodes are left for ``dce``)."""
    users, results = graph.users(), set(graph.result_values())
    for i, node in enumerate(graph.nodes):
        if node.op != ASSEMBLED:
            continue
        packed = _packed(node, users, results)
        if packed is not None:
            packed.outputs[0].producer = packed
            graph.nodes[i] = packed
    return graph
