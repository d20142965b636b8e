"""Updates in place: a fused loop that computes the new value of a parameter (or an optimizer
state) writes it straight into that tensor's memory, as an eager optimizer step does, instead of
into a new array that the call then copies back.

The loop may write into an input it reads element by element (``full``) when nothing reads the
old value afterwards: no later node, no result of the graph, and no view of it (a reshape,
slice or transpose shares its memory). The loop is then built without ``restrict`` on the
pointers concerned. At run time an input that is not a writable C-contiguous array of the
output's type gets a new array instead (the write-back copies it, as without this pass).
"""

from __future__ import annotations

from pullback.registry import OPS

from .._fused import FusedKernel
from .._ir import Graph, Node, Value
from ._registry import graph_pass
from .fusion import FUSED_OP


def _aliases(graph: Graph, value: Value) -> set[Value]:
    """``value`` and every value that may share its memory (views of it, transitively)."""
    found = {value}
    for node in graph.nodes:
        op = OPS.get(node.op)
        if op is not None and op.view and node.inputs and node.inputs[0] in found:
            found.update(node.outputs)
    return found


@graph_pass("write_in_place")
def write_in_place(graph: Graph) -> Graph:
    """Let fused loops write placeholders' new values into the placeholders' own arrays."""
    position = {id(n): i for i, n in enumerate(graph.nodes)}
    last_read: dict[Value, int] = {}
    for i, reader in enumerate(graph.nodes):
        for v in reader.input_values():
            last_read[v] = i
    results = {v for v in graph.outputs if v is not None} | {v for _, v in graph.grads if v}
    for ph, new in graph.mutations:
        node = new.producer
        if node is None or node.op != FUSED_OP or ph.kind == "scalar":
            continue
        kernel: FusedKernel = node.attrs["kernel"]
        old = ph.value
        if old not in node.inputs or new.dtype != old.dtype or new.shape != old.shape:
            continue
        k = node.inputs.index(old)
        if kernel.input_kinds[k] != "full" or k in kernel.out_into.values():
            continue
        here = position[id(node)]
        if any(last_read.get(a, -1) > here or a in results for a in _aliases(graph, old)):
            continue
        kernel.out_into[node.outputs.index(new)] = k
        kernel._built, kernel._function = False, None
    return graph


def written_in_place(node: Node) -> dict[int, int]:
    """For a fused node: output index -> the input index it writes into."""
    return dict(node.attrs["kernel"].out_into) if node.op == FUSED_OP else {}
