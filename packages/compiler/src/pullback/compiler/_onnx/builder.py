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

Two more things follow the batch without being computed from the inputs: a constant made at
the batch's size (an RNN's zero initial state, an index table broadcast over the batch) and a
Python number equal to the batch size (``reduction="batchmean"`` divides by it). Where such a
size is exactly an input's batch size in both traces, the constant is written as its first
slice expanded to the input's size (read by ``Shape``), and the number as that size; a
constant whose slices differ along the batch, or a size that is some other function of the
batch, is an error naming it.
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
BATCH_AWARE_ATTRS = {"reshape": "shape", "broadcast_to": "shape",
                     "nn.conv2d_input_grad": "input_shape", "nn.conv3d_input_grad": "input_shape",
                     "nn.col2im": "input_shape"}
_NUMBERS = (int, float, np.integer, np.floating)


class BatchAxes:
    """Which axes of each value vary with the batch size (two traces of one model compared)."""

    def __init__(self, graph: Graph, other: Graph | None) -> None:
        self.axes: dict[Value, frozenset[int]] = {}
        self.attrs: dict[Node, dict[str, Any]] = {}
        self.sources: list[tuple[Value, int, int, int]] = []
        self.expanded: dict[Value, dict[int, tuple[Value, int]]] = {}
        self.numbers: dict[tuple[Node, int], tuple[Value, int]] = {}
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
        # (input, axis, size in this trace, size in the other) of each batch axis of an input
        self.sources += [(a, d, a.shape[d], b.shape[d])
                         for (a, b) in pairs[:len(graph.placeholders)] for d in self.of(a)]
        # constant -> {axis: (input, input axis)}: rows made at the batch's size
        for v, w in zip(graph.constants, other.constants):
            if v in self.axes:
                self.expanded[v] = self._batch_constant(graph.constants[v], other.constants[w],
                                                        self.axes[v])
        # (node, input position) -> (input, input axis): numbers equal to the batch size
        for a, b in zip(graph.nodes, other.nodes):
            for i, (x, y) in enumerate(zip(a.inputs, b.inputs)):
                if isinstance(x, _NUMBERS) and not isinstance(x, bool) and x != y:
                    self.numbers[(a, i)] = self._source_of(
                        x, y, f"{a.op}'s input {i} ({x!r}){where(a)}")

    def _source_of(self, size: Any, other: Any, what: str) -> tuple[Value, int]:
        """The input axis whose size is ``size`` in this trace and ``other`` in the other."""
        for value, axis, here, there in self.sources:
            if (size, other) == (here, there):
                return value, axis
        raise ExportError(f"export_onnx: {what} depends on the batch size ({size} at one batch "
                          f"size, {other} at another), not as an input's size; export with "
                          "dynamic_batch=False")

    def _batch_constant(self, array: Any, other: Any,
                        axes: frozenset[int]) -> dict[int, tuple[Value, int]]:
        array, other = np.asarray(array), np.asarray(other)
        what = f"a constant of shape {array.shape}"
        found = {d: self._source_of(array.shape[d], other.shape[d], f"{what} (axis {d})")
                 for d in sorted(axes)}
        first = _first_slice(array, axes)
        if not (_same(array, np.broadcast_to(first, array.shape)) and
                _same(other, np.broadcast_to(first, other.shape))):
            raise ExportError(f"export_onnx: {what} depends on the batch size and its rows "
                              "differ along the batch (a table of the batch's indices?); export "
                              "with dynamic_batch=False")
        return found

    @staticmethod
    def _check_attrs(a: Node, b: Node) -> None:
        aware = BATCH_AWARE_ATTRS.get(a.op)
        for key, value in a.attrs.items():
            if key != aware and not _same(value, b.attrs.get(key)):
                raise ExportError(f"export_onnx: {a.op}'s {key} ({value!r}) depends on the "
                                  f"batch size{where(a)}; export with dynamic_batch=False")

    def of(self, v: Value) -> frozenset[int]:
        return self.axes.get(v, frozenset())


def _first_slice(array: np.ndarray, axes: Any) -> np.ndarray:
    """``array`` with its ``axes`` cut to their first entry (kept, of size 1)."""
    return array[tuple(slice(0, 1) if d in axes else slice(None) for d in range(array.ndim))]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc" and b.dtype.kind in "fc"))
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
        self._sizes: dict[tuple[Value, int], str] = {}
        # a number equal to the batch size becomes a 0-d int64 value read from an input's shape
        self._batch_numbers: dict[Value, tuple[Value, int]] = {}
        for (node, i), source in batch.numbers.items():
            size = Value((), np.int64)
            self._batch_numbers[size] = source
            node.inputs = node.inputs[:i] + (size,) + node.inputs[i + 1:]

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
            if v in self._batch_numbers:
                source, axis = self._batch_numbers[v]
                self.names[v] = self.emit("Squeeze", [self.size_of(source, axis),
                                                      self.ints([0], "axes")])
                return self.names[v]
            if v not in self.graph.constants:
                raise self.fail(f"reads %{v.id}, which nothing defined before")
            array = np.asarray(self.graph.constants[v])
            hint = self.graph.constant_names.get(v, f"c{v.id}")
            if v in self.batch.expanded:
                self.names[v] = self._expanded(array, self.batch.expanded[v], hint)
            else:
                self.names[v] = self.initializer(array, hint)
        return self.names[v]

    def size_of(self, v: Value, axis: int) -> str:
        """A 1-element int64 tensor: the size of ``v``'s ``axis`` when the model runs."""
        if (v, axis) not in self._sizes:
            self._sizes[(v, axis)] = self.emit("Shape", [self.name(v)], start=axis, end=axis + 1)
        return self._sizes[(v, axis)]

    def _expanded(self, array: np.ndarray, axes: dict[int, tuple[Value, int]],
                  hint: str) -> str:
        """A constant made at the batch's size: its first slice, expanded to the input's."""
        first = _first_slice(array, axes)
        sizes = [self.size_of(*axes[d]) if d in axes else self.ints([n])
                 for d, n in enumerate(array.shape)]
        return self.emit("Expand", [self.constant(first, hint), self.emit("Concat", sizes, axis=0)])

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
        self.initializers.append(numpy_helper.from_array(np.asarray(array, order="C"), name))
        return name

    def constant(self, array: np.ndarray, hint: str) -> str:
        """A fixed array that is no weight (a shape, a number of a formula, a mask): a
        ``Constant`` node, as ``torch.onnx.export`` writes them."""
        from onnx import numpy_helper

        name = self.fresh(hint)
        value = numpy_helper.from_array(np.asarray(array, order="C"), name)
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
