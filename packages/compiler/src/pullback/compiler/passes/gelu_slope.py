"""GELU's slope from the forward: where a value ``x`` is read by a forward loop (GELU, or any
fused loop) and otherwise only by the ``gelu_backward(g, x)`` of its gradient, the forward loop
also writes ``s = gelu'(x)`` and each backward becomes ``g * s``.

Why: exact GELU's derivative needs ``erf`` and ``exp`` of every activation, and in a training
step the backward recomputed them from ``x``, which the graph kept for that alone. Computed in
the forward loop instead, the slope costs one ``exp`` more there (``erf`` is already computed
for GELU itself) and the backward is one multiply, which its product's epilogue takes. ``x`` is
then read by the forward loop only, so ``matmul_epilogue`` can run that loop in ``x``'s product:
the activations are written once, while still in the cache. As many arrays are kept (``s``
instead of ``x``). The gain is small, as both loops were about as much memory-bound as
compute-bound: on the benchmark GPT (2048 x 512 activations) its four GELU layers' products and
loops took 17.2-17.6 ms per step against 17.6-18.2 ms without the pass (docs/compiler.md).

The slope is ``compiler.gelu_slope``, the very expression gelu_backward multiplies by, so
``g * s`` gives its bits; as a fused loop it rounds as the fused loops do (transcendental
functions within an ulp or two of NumPy's), hence the fused tolerance. Run after
``fuse_elementwise`` and before ``matmul_epilogue``.
"""

from __future__ import annotations

from .._fused import FusedKernel, FusedOp
from .._ir import Graph, Node, Value
from ._registry import graph_pass
from .fusion import FUSED_OP, as_fused

SLOPE_OP = "compiler.gelu_slope"


def _exact_gelu(node: Node | FusedOp) -> bool:
    return node.attrs.get("approximate", "none") == "none"


def _reads_for_slope(node: Node, x: Value) -> bool:
    """Whether ``node`` reads ``x`` only as the activation of exact GELU backwards."""
    if node.op == "gelu_backward":
        g = node.inputs[0]
        return (node.inputs[1] is x and g is not x and g.__class__ is Value
                and g.dtype == x.dtype and _exact_gelu(node))
    if node.op != FUSED_OP:
        return False
    kernel: FusedKernel = node.attrs["kernel"]
    k = node.inputs.index(x)
    uses = [(op, j) for op in kernel.ops for j, arg in enumerate(op.args) if arg == ("in", k)]
    return bool(uses) and all(op.op == "gelu_backward" and j == 1 and _exact_gelu(op)
                              for op, j in uses)


def _gelu_activations(node: Node) -> list[Value]:
    """The values ``node`` applies exact GELU to (a GELU node, or GELU ops of a fused loop)."""
    if node.op == "gelu":
        x = node.inputs[0]
        return [x] if _exact_gelu(node) and x.__class__ is Value else []
    if node.op != FUSED_OP:
        return []
    kernel: FusedKernel = node.attrs["kernel"]
    found = [node.inputs[op.args[0][1]] for op in kernel.ops
             if op.op == "gelu" and _exact_gelu(op) and op.args[0][0] == "in"]
    return list(dict.fromkeys(found))


def _backward_readers(node: Node, x: Value, users: dict[Value, list[Node]],
                      results: set[Value]) -> list[Node] | None:
    """The nodes other than the forward ``node`` that read ``x``, when they all read it as
    GELU backwards' activation and ``node``'s loop can write the slope; else None."""
    if x in results or x.weak or x.dtype.kind != "f":
        return None
    others = [n for n in users.get(x, []) if n is not node]
    if not others or not all(_reads_for_slope(n, x) for n in others):
        return None
    if node.op == FUSED_OP:
        kernel: FusedKernel = node.attrs["kernel"]
        k = node.inputs.index(x)
        if kernel.reduce_from is not None or kernel.shape != x.shape or \
                kernel.input_kinds[k] != "full":
            return None
    return others


def _with_slope(loop: Node, x: Value) -> tuple[Node, Value]:
    """A copy of the fused ``loop`` that also writes ``gelu'(x)``, and that value."""
    kernel: FusedKernel = loop.attrs["kernel"]
    k = loop.inputs.index(x)
    ops = [*kernel.ops, FusedOp(SLOPE_OP, (("in", k),), {"approximate": "none"}, x.dtype)]
    new = FusedKernel(ops, list(kernel.input_kinds), list(kernel.input_dtypes), kernel.shape,
                      kernel.split, [*kernel.outputs, len(ops) - 1])
    slope = Value(x.shape, x.dtype)
    outputs = [*loop.outputs, slope]
    node = Node(FUSED_OP, loop.inputs, {"kernel": new}, outputs,
                layout=tuple(range(len(outputs))),
                meta={"fused": [*loop.meta.get("fused", []), SLOPE_OP]})
    for j, v in enumerate(outputs):
        v.producer, v.index = node, j
    return node, slope


def _times_slope(node: Node, x: Value, slope: Value) -> Node:
    """``node`` with each ``gelu_backward(g, x)`` made ``g * slope``."""
    if node.op == "gelu_backward":
        new = Node("mul", (node.inputs[0], slope), {}, list(node.outputs))
        for v in new.outputs:
            v.producer = new
        return new
    kernel: FusedKernel = node.attrs["kernel"]
    k = node.inputs.index(x)
    ops = [FusedOp("mul", (op.args[0], ("in", k)), {}, op.dtype) if op.op == "gelu_backward"
           and op.args[1] == ("in", k) else op for op in kernel.ops]
    # slope takes x's place: same shape, dtype and way of reading
    new_kernel = FusedKernel(ops, list(kernel.input_kinds), list(kernel.input_dtypes),
                             kernel.shape, kernel.split, list(kernel.outputs),
                             reduce_from=kernel.reduce_from, keepdims=kernel.keepdims)
    inputs = tuple(slope if v is x else v for v in node.inputs)
    new = Node(FUSED_OP, inputs, {"kernel": new_kernel}, list(node.outputs), node.layout,
               dict(node.meta))
    for v in new.outputs:
        v.producer = new
    return new


@graph_pass("gelu_slope_in_forward", exact=False)
def gelu_slope_in_forward(graph: Graph) -> Graph:
    """Compute exact GELU's slope in its forward loop; its backwards multiply by it."""
    users = graph.users()
    results = set(graph.result_values())
    index = {id(n): i for i, n in enumerate(graph.nodes)}
    replaced: dict[int, Node] = {}
    for node in graph.nodes:
        for x in _gelu_activations(node):
            backward = _backward_readers(node, x, users, results)
            if backward is None or any(id(n) in replaced for n in (node, *backward)):
                continue
            if any(index[id(b)] < index[id(node)] for b in backward):
                continue  # the slope must be computed before it is read
            loop = as_fused(node, users, results)
            if loop is None:
                continue
            replaced[id(node)], slope = _with_slope(loop, x)
            for b in backward:
                replaced[id(b)] = _times_slope(b, x, slope)
    graph.replace_nodes(replaced)
    return graph
