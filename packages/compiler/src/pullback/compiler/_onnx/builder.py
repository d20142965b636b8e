"""Building an ONNX graph from an inference graph: names, nodes, initializers, and which axes
of each value are the batch.

A node's ``"onnx"`` rule writes it through an :class:`OnnxBuilder`: ``name(v)`` is the tensor a
value is (a graph input, an initializer or an earlier node's output), ``operand(a, dtype)`` the
same for an argument that may be a Python number (a scalar initializer of ``dtype``, NumPy's
rule for Python numbers), ``emit(op_type, inputs, ...)`` adds an ONNX node,
``initializer(array)`` a weight and ``constant(array)`` a fixed array that is no weight. The
rule's last node must write ``output(v)`` for each output.

Dynamic batch. The model is traced twice, at the example's batch size and at one more; the two
graphs have the same nodes (else the model's structure depends on the batch size and the
export says so). An axis of a value whose size differs between them is a batch axis: the
graph's inputs and outputs get the symbolic size ``batch`` there, and an op whose attributes
hold sizes (``reshape``, ``broadcast_to``) writes -1 (or 1) where they differ.
``batch_sized(node, attr)`` tells a rule which entries of an attribute vary with the batch; any
other attribute that differs between the traces is an error naming the op.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .._export import distinct, where
from .._ir import Graph, Node, Value
from ..errors import ExportError

ONNX_RULE = "onnx"
BATCH = "batch"  # the symbolic name of the batch axis in the model's inputs and outputs
# the rules that read sizes from their attributes and handle a batch-sized entry themselves
BATCH_AWARE_ATTRS = {"reshape": "shape", "broadcast_to": "shape"}


class BatchAxes:
    """Which axes of each value vary with the batch size (two traces of one model compared)."""

    def __init__(self, graph: Graph, other: Graph | None) -> None:
        self.axes: dict[Value, frozenset[int]] = {}
        self.attrs: dict[Node, dict[str, Any]] = {}
        if other is None:
            return
        if [n.op for n in graph.nodes] != [n.op for n in other.nodes] or \
                len(graph.placeholders) != len(other.placeholders) or \
                len(graph.outputs) != len(other.outputs):
            raise ExportError("export_onnx: the model traces to different graphs at two batch "
                              "sizes (its structure depends on the batch size); export it with "
                              "dynamic_batch=False")
        pairs = [(a.value, b.value) for a, b in zip(graph.placeholders, other.placeholders)]
        pairs += list(zip(graph.constants, other.constants))
        for a, b in zip(graph.nodes, other.nodes):
            pairs += list(zip(a.outputs, b.outputs))
            self.attrs[a] = b.attrs
            self._check_attrs(a, b)
        for a, b in pairs:
            if a.ndim != b.ndim:
                raise ExportError(f"export_onnx: a value has {a.ndim} axes at one batch size and "
                                  f"{b.ndim} at another; export with dynamic_batch=False")
            varying = frozenset(d for d, (s, t) in enumerate(zip(a.shape, b.shape)) if s != t)
            if varying:
                self.axes[a] = varying
        for v in graph.constants:
            if v in self.axes:
                raise ExportError(f"export_onnx: a constant of shape {v.shape} depends on the "
                                  "batch size; export with dynamic_batch=False")

    @staticmethod
    def _check_attrs(a: Node, b: Node) -> None:
        aware = BATCH_AWARE_ATTRS.get(a.op)
        for key, value in a.attrs.items():
            if key != aware and not _same(value, b.attrs.get(key)):
                raise ExportError(f"export_onnx: {a.op}'s {key} ({value!r}) depends on the "
                                  f"batch size{where(a)}; export with dynamic_batch=False")

    def of(self, v: Value) -> frozenset[int]:
        return self.axes.get(v, frozenset())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001  (values without an equality: treat as different)
        return False


class OnnxBuilder:
    """The ONNX nodes, initializers and names of one export (see the module docstring)."""

    def __init__(self, graph: Graph, batch: BatchAxes, opset: int) -> None:
        from onnx import helper

        self.helper = helper
        self.graph = graph
        self.batch = batch
        self.opset = opset
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.node: Node | None = None
        self._scalars: dict[tuple[str, Any], str] = {}

    # -- names ---------------------------------------------------------------------------------
    def fresh(self, text: str) -> str:
        return distinct(text, self.used)

    def bind(self, v: Value, name: str) -> str:
        """Give ``v`` the tensor name ``name`` (made unique)."""
        self.names[v] = self.fresh(name)
        return self.names[v]

    def name(self, v: Value) -> str:
        """The tensor holding ``v`` (a constant becomes an initializer the first time)."""
        if v not in self.names:
            if v not in self.graph.constants:
                raise self.fail(f"reads %{v.id}, which nothing defined before")
            array = np.asarray(self.graph.constants[v])
            self.names[v] = self.initializer(array,
                                             self.graph.constant_names.get(v, f"c{v.id}"))
        return self.names[v]

    def output(self, v: Value) -> str:
        """The name the node writing ``v`` must use."""
        return self.names[v] if v in self.names else self.bind(v, f"v{v.id}")

    def operand(self, a: Any, dtype: Any) -> str:
        """A value, or a Python number as a scalar of ``dtype``, cast to ``dtype`` if needed."""
        if isinstance(a, Value):
            return self.cast(self.name(a), a.dtype, dtype)
        return self.scalar(a, dtype)

    def scalar(self, number: Any, dtype: Any) -> str:
        key = (np.dtype(dtype).name, float(number) if not isinstance(number, bool) else number)
        if key not in self._scalars:
            self._scalars[key] = self.constant(np.asarray(number, dtype=dtype), "scalar")
        return self._scalars[key]

    def cast(self, name: str, source: Any, target: Any) -> str:
        if np.dtype(source) == np.dtype(target):
            return name
        return self.emit("Cast", [name], to=self.onnx_type(target))

    def onnx_type(self, dtype: Any) -> int:
        try:
            return self.helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
        except (KeyError, TypeError, ValueError):
            raise self.fail(f"dtype {np.dtype(dtype)} has no ONNX type") from None

    # -- nodes and initializers ----------------------------------------------------------------
    def initializer(self, array: np.ndarray, hint: str) -> str:
        """A weight: an initializer (``import_onnx`` makes the float ones Parameters)."""
        from onnx import numpy_helper

        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def constant(self, array: np.ndarray, hint: str) -> str:
        """A fixed array that is no weight (a shape, a number of a formula, a mask): a
        ``Constant`` node, as ``torch.onnx.export`` writes them."""
        from onnx import numpy_helper

        name = self.fresh(hint)
        value = numpy_helper.from_array(np.ascontiguousarray(array), name)
        return self.emit("Constant", [], [name], value=value)

    def ints(self, values: Sequence[int], hint: str = "shape") -> str:
        """An int64 initializer (the shapes, axes and slice bounds ONNX takes as inputs)."""
        return self.constant(np.asarray(list(values), dtype=np.int64), hint)

    def emit(self, op_type: str, inputs: Sequence[str], outputs: Sequence[str] | None = None,
             **attrs: Any) -> str:
        """Add a node; the name of its (first) output."""
        if outputs is None:
            outputs = [self.fresh(f"{op_type.lower()}{len(self.nodes)}")]
        self.nodes.append(self.helper.make_node(op_type, list(inputs), list(outputs),
                                                name=self.fresh(f"{op_type}_{len(self.nodes)}"),
                                                **attrs))
        return outputs[0]

    # -- batch ---------------------------------------------------------------------------------
    def batch_axes(self, v: Value) -> frozenset[int]:
        return self.batch.of(v)

    def batch_sized(self, node: Node, attr: str) -> list[bool]:
        """For each entry of the size tuple ``node.attrs[attr]``: does it vary with the batch?"""
        mine = tuple(node.attrs[attr])
        theirs = self.batch.attrs.get(node, {}).get(attr, mine)
        return [a != b for a, b in zip(mine, tuple(theirs))]

    def fail(self, why: str) -> ExportError:
        node = self.node
        op = f"{node.op}: " if node is not None else ""
        return ExportError(f"export_onnx: {op}{why}{where(node) if node is not None else ''}")
