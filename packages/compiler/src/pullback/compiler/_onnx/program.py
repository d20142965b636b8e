"""An ONNX graph checked and made runnable: :class:`Program`.

Building a Program checks the graph as onnxruntime does before it runs one, so that a
crafted or broken file is one :class:`~pullback.compiler.OnnxImportError` naming the node or
tensor, never a KeyError at the first forward:

* every node input is a graph input, an initializer, an earlier node's output or (in a
  subgraph) a name of the enclosing graphs; no name is produced twice;
* nodes out of order are sorted (ONNX requires topological order, onnxruntime sorts
  too); a cycle is refused, naming a node on it;
* every graph output is produced;
* every operator has a converter (:mod:`.import_ops`) for the model's opset;
* subgraphs (``If``, ``Loop``, ``Scan``) are checked the same way, nested at most
  :data:`MAX_NESTING` deep.

Running a Program runs its steps in order on an environment of named values (Tensors, lists
for sequences, None for absent optionals).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import OnnxImportError
from .import_ops import Converter, NodeContext, lookup, supported
from .tensors import element_dtype, tensor_from_proto

MAX_NESTING = 16  # subgraphs inside subgraphs; real models nest two or three deep


def node_label(node: Any, index: int) -> str:
    return f"node {node.name!r} ({node.op_type}, #{index})" if node.name else \
        f"node #{index} ({node.op_type})"


@dataclass
class Step:
    """One node, ready to run."""

    convert: Converter
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any]
    context: NodeContext
    label: str


def _attributes(node: Any, label: str, opsets: dict[str, int], outer: set[str],
                depth: int) -> dict[str, Any]:
    from onnx import AttributeProto, helper

    values: dict[str, Any] = {}
    for a in node.attribute:
        if a.ref_attr_name:
            raise OnnxImportError(f"import_onnx: {label}: attribute {a.name!r} refers to a "
                                  "function's attribute outside a function")
        try:
            value = helper.get_attribute_value(a)
        except Exception as exc:  # noqa: BLE001  (a malformed attribute, named)
            raise OnnxImportError(f"import_onnx: {label}: attribute {a.name!r} cannot be read "
                                  f"({exc})") from None
        if a.type == AttributeProto.GRAPH:
            value = Program(value, opsets, outer, depth + 1)
        elif a.type == AttributeProto.GRAPHS:
            value = [Program(g, opsets, outer, depth + 1) for g in value]
        elif isinstance(value, bytes):
            value = value.decode("utf-8", errors="replace")
        elif isinstance(value, list) and value and isinstance(value[0], bytes):
            value = [v.decode("utf-8", errors="replace") for v in value]
        values[a.name] = value
    return values


def _sorted_nodes(graph: Any, known: set[str]) -> list[tuple[int, Any]]:
    """The nodes in an order where each input is produced before it is read (Kahn's
    algorithm, stable: a sorted graph keeps its order). An input nobody produces and a
    cycle are errors naming the node."""
    nodes = list(enumerate(graph.node))
    producer: dict[str, int] = {}
    for i, node in nodes:
        for name in node.output:
            if not name:
                continue
            if name in producer or name in known:
                raise OnnxImportError(f"import_onnx: {node_label(node, i)} writes {name!r}, "
                                      "which another node or a graph input already defines "
                                      "(ONNX names each value once)")
            producer[name] = i
    waiting = [0] * len(nodes)
    readers: dict[int, list[int]] = {}
    for i, node in nodes:
        for name in set(_reads(node)):
            if name in known:
                continue
            if name not in producer:
                raise OnnxImportError(f"import_onnx: {node_label(node, i)} reads {name!r}, "
                                      "which no node, graph input or initializer defines")
            waiting[i] += 1
            readers.setdefault(producer[name], []).append(i)
    ready = deque(i for i in range(len(nodes)) if waiting[i] == 0)
    order = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for j in sorted(readers.get(i, [])):
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    if len(order) != len(nodes):
        stuck = next(i for i in range(len(nodes)) if waiting[i] > 0)
        raise OnnxImportError(f"import_onnx: the graph has a cycle through "
                              f"{node_label(graph.node[stuck], stuck)}")
    return [nodes[i] for i in order]


def _reads(node: Any) -> list[str]:
    """What a node reads: its inputs and, for control flow, the outer names its subgraphs
    read (an If's branches see the values computed before it)."""
    from onnx import AttributeProto

    names = [n for n in node.input if n]
    for a in node.attribute:
        graphs = [a.g] if a.type == AttributeProto.GRAPH else \
            list(a.graphs) if a.type == AttributeProto.GRAPHS else []
        for g in graphs:
            names += _free_names(g)
    return names


def _free_names(graph: Any) -> list[str]:
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    defined |= {o for n in graph.node for o in n.output}
    return [n for node in graph.node for n in _reads(node) if n not in defined]


def _check_type(value: Any) -> None:
    """A graph input or output of a tensor type a pullback Tensor cannot hold is refused when
    the model is imported, not when a value of it arrives."""
    if value.type.WhichOneof("value") == "tensor_type":
        element_dtype(value.type.tensor_type.elem_type, f"graph value {value.name!r}")


class Program:
    """A checked graph: its constants (initializers), its steps in a valid order, the names
    of its inputs and outputs."""

    def __init__(self, graph: Any, opsets: dict[str, int], outer: set[str] = frozenset(),
                 depth: int = 0, parameters: dict[str, Any] | None = None) -> None:
        if depth > MAX_NESTING:
            raise OnnxImportError(f"import_onnx: subgraphs nested more than {MAX_NESTING} deep "
                                  f"(at graph {graph.name!r})")
        self.name = graph.name
        self.constants: dict[str, Any] = {}
        for init in graph.initializer:
            if parameters is not None and init.name in parameters:
                continue
            self.constants[init.name] = tensor_from_proto(init)
        initializers = {t.name for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in initializers]
        for value in graph.input:
            if value.name in initializers:
                continue
            if depth == 0 and value.type.WhichOneof("value") is None:
                raise OnnxImportError(f"import_onnx: graph input {value.name!r} has no type")
            _check_type(value)
        for value in graph.output:
            _check_type(value)
        known = set(outer) | initializers | set(self.input_names)
        self.steps: list[Step] = []
        for index, node in _sorted_nodes(graph, known):
            self.steps.append(self._step(node, index, opsets, known, depth))
        produced = known | {o for s in self.steps for o in s.outputs}
        self.output_names = [o.name for o in graph.output]
        for name in self.output_names:
            if name not in produced:
                raise OnnxImportError(f"import_onnx: graph output {name!r} of graph "
                                      f"{graph.name!r} is produced by no node and is no input")

    def _step(self, node: Any, index: int, opsets: dict[str, int], known: set[str],
              depth: int) -> Step:
        label = node_label(node, index)
        domain = node.domain if node.domain != "ai.onnx" else ""
        opset = opsets.get(domain)
        convert = lookup(domain, node.op_type, opset) if opset is not None else None
        if convert is None:
            raise OnnxImportError(
                f"import_onnx: operator {node.op_type!r} (domain {domain or 'ai.onnx'!r}, "
                f"opset {opset}, {label}) has no pullback form; supported: "
                f"{', '.join(supported())}")
        attrs = _attributes(node, label, opsets, known, depth)
        known.update(o for o in node.output if o)
        context = NodeContext(node.op_type, node.name, opset, len(node.output))
        return Step(convert, list(node.input), list(node.output), attrs, context, label)

    def run(self, env: dict[str, Any], run_graph: Callable[..., list[Any]]) -> list[Any]:
        """The outputs, computed from ``env`` (the inputs by name, and the enclosing graphs'
        values); every failure names its node."""
        env.update(self.constants)
        for step in self.steps:
            args = [env[n] if n else None for n in step.inputs]
            step.context.run_graph = run_graph
            step.context.scope = env
            try:
                results = step.convert(args, step.attrs, step.context)
            except OnnxImportError:
                raise
            except NotImplementedError as exc:
                raise OnnxImportError(f"import_onnx: {step.label} (opset "
                                      f"{step.context.opset}): {exc} is not supported") from None
            except Exception as exc:  # noqa: BLE001  (a node that fails is named)
                raise OnnxImportError(f"import_onnx: {step.label} failed: "
                                      f"{type(exc).__name__}: {exc}") from exc
            for i, name in enumerate(step.outputs):
                if not name:
                    continue
                if i >= len(results):
                    raise OnnxImportError(f"import_onnx: {step.label}: output {i} ({name!r}) "
                                          "is not one pullback computes")
                env[name] = results[i]
        return [env[name] for name in self.output_names]
