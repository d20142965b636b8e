"""Matmul epilogues: ``linear``/``matmul`` followed by its elementwise consumer (a bias, an
activation: ReLU, GELU, tanh, any fused loop) becomes one ``compiler.matmul_epilogue`` node.

The product is computed by BLAS as before; the elementwise loop then runs over it and writes its
result into the product's own buffer, which nothing else reads: no second full-size array is
allocated and filled. It applies when the loop is the product's only reader (in a training
graph, ReLU's and tanh's backward read the activation, not the product, so theirs qualify;
GELU's backward reads the product, unless ``gelu_slope_in_forward`` made it read the slope).
Results are those of the two nodes it replaces, bit for bit.
"""

from __future__ import annotations

from typing import Any

from .._fused import FusedKernel
from .._ir import Graph, Node, Value
from ._registry import graph_pass
from .fusion import as_fused

EPILOGUE_OP = "compiler.matmul_epilogue"
_PRODUCTS = ("nn.linear", "matmul")


@graph_pass("matmul_epilogue", exact=False)
def matmul_epilogue(graph: Graph) -> Graph:
    """Run each product's only elementwise consumer in the product's buffer."""
    users = graph.users()
    results = set(graph.result_values())
    replaced: dict[int, Node | None] = {}  # id(node) -> its replacement (None: dropped)
    for node in graph.nodes:
        if node.op not in _PRODUCTS or len(node.outputs) != 1 or id(node) in replaced:
            continue
        product = node.outputs[0]
        readers = users.get(product, [])
        if product in results or len(readers) != 1 or id(readers[0]) in replaced:
            continue
        loop = as_fused(readers[0], users, results)
        if loop is None:
            continue
        kernel: FusedKernel = loop.attrs["kernel"]
        k = loop.inputs.index(product)
        if kernel.input_kinds[k] != "full" or kernel.reduce_from is not None or \
                loop.inputs.count(product) != 1:
            continue
        target = next((j for j, o in enumerate(kernel.outputs)
                       if kernel.ops[o].dtype == product.dtype and j not in kernel.out_into), None)
        if target is not None:
            kernel.out_into[target] = k
        if product.dtype.name in ("float32", "float64"):
            kernel.after_product = product.dtype.name  # MKL may run it block by block
        kernel._built, kernel._function = False, None
        product_inputs = tuple(node.inputs)
        if node.op == "nn.linear" and _bias_into_loop(kernel, loop, k, node.inputs[2]):
            product_inputs = (*node.inputs[:2], None)
        rest = tuple(v for v in loop.inputs if v is not product)
        epilogue = Node(EPILOGUE_OP, product_inputs + rest,
                        {"product": node.op, "product_attrs": dict(node.attrs),
                         "n_product_args": len(node.inputs), "at": k, "kernel": kernel},
                        list(loop.outputs), layout=loop.layout,
                        meta={"fused": [node.op] + loop.meta.get("fused", [readers[0].op])})
        for v in epilogue.outputs:
            v.producer = epilogue
        replaced[id(node)] = None
        replaced[id(readers[0])] = epilogue
    graph.replace_nodes(replaced)
    return graph


def _bias_into_loop(kernel: FusedKernel, loop: Node, k: int, bias: Any) -> bool:
    """Move ``linear``'s ``+ bias`` into the loop (its first op, reading the bias as a row):
    the same float addition, without its own pass over the product. Only where the loop's
    other inputs can be read split before the last axis."""
    if not isinstance(bias, Value) or bias.ndim != 1 or bias.weak:
        return False
    shape = kernel.shape
    split = len(shape) - 1
    if split < 1 or bias.dtype != kernel.input_dtypes[k] or bias.shape != shape[-1:]:
        return False
    if kernel.split != split and any(kind not in ("full", "one", "number")
                                     for kind in kernel.input_kinds):
        return False
    from .._fused import FusedOp

    b = len(loop.inputs)
    def moved(arg: tuple[str, Any]) -> tuple[str, Any]:
        if arg == ("in", k):
            return ("tmp", 0)  # the product plus the bias
        return ("tmp", arg[1] + 1) if arg[0] == "tmp" else arg

    shifted = [FusedOp(op.op, tuple(map(moved, op.args)), op.attrs, op.dtype)
               for op in kernel.ops]
    kernel.ops = [FusedOp("add", (("in", k), ("in", b)), {}, bias.dtype)] + shifted
    kernel.outputs = [o + 1 for o in kernel.outputs]
    kernel.input_kinds = list(kernel.input_kinds) + ["row"]
    kernel.input_dtypes = list(kernel.input_dtypes) + [bias.dtype]
    kernel.split = split
    kernel._built, kernel._function = False, None
    loop.inputs = (*loop.inputs, bias)
    return True


def lower_epilogue(node: Node, device: str, product: Any = None) -> Any:
    """The ``compiler.lower`` rule of ``compiler.matmul_epilogue``; ``product`` replaces the
    product op's own kernel (compiled programs pass MKL's, when it is installed)."""
    from pullback.registry import get_op

    attrs = node.attrs
    if product is None and attrs["product"] == "nn.linear":
        from .._static_kernels import lower_linear

        product = lower_linear(Node("nn.linear", node.inputs[:3], {}, [node.output]), device)
    elif product is None:
        product = get_op(attrs["product"]).kernel_for(device)
    product_attrs = attrs["product_attrs"]
    n, at = attrs["n_product_args"], attrs["at"]
    kernel: FusedKernel = attrs["kernel"]
    kernel.device = device

    if not product_attrs and at == 0 and n in (2, 3):  # a matmul's or a linear layer's
        # (spelled out: slicing the arguments cost a microsecond at batch 1)
        if n == 2:
            return lambda a, b, *rest: kernel(product(a, b), *rest)
        return lambda a, b, c, *rest: kernel(product(a, b, c), *rest)

    def run(*args: Any) -> Any:
        y = product(*args[:n], **product_attrs)
        rest = args[n:]
        return kernel(*rest[:at], y, *rest[at:])

    return run
