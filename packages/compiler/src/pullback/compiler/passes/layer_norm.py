"""A residual branch's gradient summed inside layer norm's backward: where the ``gx`` of an
``nn.layer_norm_backward`` is read by one ``add`` only (a pre-norm block's residual stream:
the gradient from above plus the gradient through the norm), the two become one
``compiler.layer_norm_backward_add`` node, whose kernel adds the other operand in the pass that
writes ``gx`` (nn's C kernel with ``add=``): ``gx`` is never written and read back. The benchmark
GPT has eight such sums of 2,048 x 128 float32 per step.

Exact: the kernel computes ``add + gx`` as the add did (float addition is commutative, bit for
bit), and the parameter gradients as before. The add may be a plain ``add`` node or the one-op
fused loop ``fuse_elementwise`` made of it (so the pass runs before or after fusion); adds that
broadcast, change the dtype, or read ``gx`` twice are left alone, and so is a pair between which
another node reads the norm's parameter gradients.
"""

from __future__ import annotations

from .._ir import Graph, Node, Value
from ._registry import graph_pass
from .attention import _only_reader
from .fusion import FUSED_OP

BACKWARD = "nn.layer_norm_backward"
SUMMED = "compiler.layer_norm_backward_add"


def _added(node: Node) -> tuple[Value, Value] | None:
    """The two operands of ``node`` when it is an add of two Values of its output's shape and
    dtype (a plain ``add``, or a fused loop of that one add)."""
    if len(node.outputs) != 1 or len(node.inputs) != 2:
        return None
    if node.op == FUSED_OP:
        kernel = node.attrs["kernel"]
        if (len(kernel.ops) != 1 or kernel.ops[0].op != "add" or kernel.reduce_from is not None
                or set(kernel.ops[0].args) != {("in", 0), ("in", 1)}
                or kernel.ops[0].attrs):
            return None
    elif node.op != "add" or node.attrs:
        return None
    out = node.outputs[0]
    a, b = node.inputs
    if any(v.__class__ is not Value or v.shape != out.shape or v.dtype != out.dtype
           for v in (a, b)):
        return None
    return a, b


@graph_pass("layer_norm_backward_add")
def layer_norm_backward_add(graph: Graph) -> Graph:
    """Fold each residual add of a layer norm backward's ``gx`` into the backward."""
    users, results = graph.users(), set(graph.result_values())
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    replaced: dict[int, Node | None] = {}
    for node in graph.nodes:
        operands = _added(node)
        if operands is None:
            continue
        for gx, other in (operands, operands[::-1]):
            backward = _only_reader(gx, users, results)
            if (backward is None or backward.op != BACKWARD or backward.outputs[0] is not gx
                    or id(backward) in replaced or other is gx):
                continue
            start, end = position[id(backward)], position[id(node)]
            if any(start < position[id(reader)] < end
                   for v in backward.outputs[1:] for reader in users.get(v, [])):
                continue  # the parameter gradients are read before the add: leave the order
            summed = Node(SUMMED, (*backward.inputs, other), dict(backward.attrs),
                          [node.outputs[0], *backward.outputs[1:]], layout=backward.layout,
                          meta=backward.meta)
            for v in summed.outputs:
                v.producer = summed
            replaced[id(backward)] = None
            replaced[id(node)] = summed
            break
    graph.replace_nodes(replaced)
    return graph
