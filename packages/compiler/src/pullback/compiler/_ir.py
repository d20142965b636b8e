"""The compiler's IR: a typed SSA graph of op applications.

A :class:`Graph` is a list of :class:`Node` in execution order. Every value is a :class:`Value`,
defined once: by a :class:`Placeholder` (what the compiled function reads when it is called: a
positional input, a parameter, a buffer, a captured tensor or array, a runtime scalar), by a
constant, or as an output of one node. A node names its op as the op registry does (``"mul"``,
``"nn.linear"``; the compiler's own fused ops are ``"compiler.*"``), takes its arguments as
:func:`pullback.dispatch.apply` does (Values where apply gets Tensors; Python numbers and
``None`` as they are) plus keyword attributes, and has one output Value per array its kernel
returns (an ``aux`` kernel's saved arrays follow its output).

After the nodes, the graph says what a call gives back: ``outputs`` (the flattened result),
``mutations`` (values written back in place into placeholders: an optimizer's updates) and
``grads`` (the final ``.grad`` of tensors: ``None`` or a Value).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

PLACEHOLDER_KINDS = ("input", "param", "buffer", "captured", "grad", "array", "scalar",
                     "tangent", "saved")


class Value:
    """One SSA value: an array of a static shape and dtype, or (``weak``) a Python number known
    only at run time (an optimizer's step size): ``shape`` ``()``, ``dtype`` ``float64``, and
    NumPy's rules for Python numbers (NEP 50: ``float32 * number`` stays float32)."""

    __slots__ = ("id", "shape", "dtype", "producer", "index", "weak", "__weakref__")
    _ids = itertools.count()

    def __init__(self, shape: Sequence[int], dtype: Any, producer: Node | None = None,
                 index: int = 0, weak: bool = False) -> None:
        self.id = next(Value._ids)
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.producer = producer
        self.index = index
        self.weak = weak

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def type_text(self) -> str:
        """``float32[32, 64]`` (``float64[]`` for a 0-d value, ``scalar`` for a weak one)."""
        if self.weak:
            return "scalar"
        return f"{self.dtype.name}[{', '.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        return f"<Value %{self.id}: {self.type_text()}>"


def _values_in(t: tuple[Any, ...]) -> Iterator[Value]:
    for a in t:
        if a.__class__ is Value:
            yield a
        elif a.__class__ is tuple:
            yield from _values_in(a)


def resolve(x: Any, mapping: dict[Value, Any]) -> Any:
    """A node argument with the values in ``mapping`` replaced (also inside tuples; chains
    ``a -> b -> c`` followed)."""
    if x.__class__ is Value:
        while x in mapping:
            x = mapping[x]
        return x
    if x.__class__ is tuple:
        return tuple(resolve(e, mapping) for e in x)
    return x


def is_value(x: Any) -> bool:
    """Whether a node argument is a Value (else a Python number, ``None`` or a tuple)."""
    return x.__class__ is Value


@dataclass(eq=False)
class Node:
    """One op application.

    Attributes:
        op: the op's name in the registry.
        inputs: the positional arguments (Values, Python numbers, ``None``, tuples of them).
        attrs: the keyword attributes.
        outputs: one Value per array the kernel returns.
        layout: how the kernel's result maps to ``outputs``: ``None`` (one array), ``"aux"``
            (``(out, saved)``: out, then the saved arrays that are not ``None``, as many as
            there are outputs), or a
            tuple of the positions of a tuple result that hold arrays (multi-output ops).
        meta: where in user code it was recorded (``"source"``: ``(file, line, function)``).
    """

    op: str
    inputs: tuple[Any, ...]
    attrs: dict[str, Any]
    outputs: list[Value] = field(default_factory=list)
    layout: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def output(self) -> Value:
        """The first output (most ops have only one)."""
        return self.outputs[0]

    def input_values(self) -> Iterator[Value]:
        """The arguments that are Values (also inside tuples), in order (a Value may appear
        twice)."""
        for a in self.inputs:
            if a.__class__ is Value:
                yield a
            elif a.__class__ is tuple:
                yield from _values_in(a)

    def __repr__(self) -> str:
        return f"<Node {self.op} -> {', '.join('%' + str(v.id) for v in self.outputs)}>"


@dataclass(eq=False)
class Placeholder:
    """What a compiled call reads for one graph input.

    Attributes:
        kind: ``"input"`` (positional argument ``position`` of the call, a Tensor),
            ``"param"``/``"buffer"`` (a module's, named by its path), ``"captured"`` (any
            other Tensor the function used, read live at each call), ``"grad"`` (the
            ``.grad`` a call finds on ``source``, when the function accumulates into it),
            ``"array"`` (a backend array an optimizer updates in place, e.g. its
            ``exp_avg``), ``"scalar"`` (a Python number an optimizer's update computes at each
            call); in a compiled forward's backward graph, ``"tangent"`` (the gradient of the
            output ``position``) and ``"saved"`` (the forward's value ``position``).
        name: a readable name (``"x0"``, ``"fc1.weight"``, ``"AdamW.state[fc1.weight].exp_avg"``).
        value: the Value it defines.
        source: the Tensor (params, buffers, captured), the array (kind ``"array"``), or the
            scalar's slot number; ``None`` for positional inputs.
        position: for kind ``"input"``, the index of the flattened positional argument.
        path: for an optimizer state's array, ``(optimizer, parameter, key)``: a call checks
            that the state still holds this array (``load_state_dict`` replaces it).
    """

    kind: str
    name: str
    value: Value
    source: Any = None
    position: int | None = None
    path: tuple[Any, Any, str] | None = None  # an "array": (optimizer, parameter, state key)


@dataclass(eq=False)
class Graph:
    """A traced function. See the module docstring."""

    placeholders: list[Placeholder] = field(default_factory=list)
    constants: dict[Value, Any] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[Value | None] = field(default_factory=list)
    output_tree: Any = None
    mutations: list[tuple[Placeholder, Value]] = field(default_factory=list)
    grads: list[tuple[Placeholder, Value | None]] = field(default_factory=list)
    device: str = "cpu"
    name: str = "graph"
    # readable names of constants (a frozen parameter's path, what a folded one came from): the
    # exporters name their arrays after them
    constant_names: dict[Value, str] = field(default_factory=dict)

    # -- building ------------------------------------------------------------------------------
    def add_placeholder(self, kind: str, name: str, shape: Sequence[int], dtype: Any,
                        source: Any = None, position: int | None = None) -> Placeholder:
        if kind not in PLACEHOLDER_KINDS:
            raise ValueError(f"placeholder kind must be one of {PLACEHOLDER_KINDS}, got {kind!r}")
        ph = Placeholder(kind, name, Value(shape, dtype, weak=kind == "scalar"), source, position)
        self.placeholders.append(ph)
        return ph

    def add_constant(self, array: Any) -> Value:
        value = Value(array.shape, array.dtype)
        self.constants[value] = array
        return value

    def add_node(self, op: str, inputs: Sequence[Any], attrs: dict[str, Any],
                 out_types: Sequence[tuple[Sequence[int], Any]], layout: Any = None,
                 meta: dict[str, Any] | None = None) -> Node:
        node = Node(op, tuple(inputs), dict(attrs), layout=layout, meta=dict(meta or {}))
        node.outputs = [Value(shape, dtype, node, i) for i, (shape, dtype) in enumerate(out_types)]
        self.nodes.append(node)
        return node

    # -- queries -------------------------------------------------------------------------------
    def placeholder_of(self, value: Value) -> Placeholder | None:
        for ph in self.placeholders:
            if ph.value is value:
                return ph
        return None

    def users(self) -> dict[Value, list[Node]]:
        """For each value, the nodes that read it (in order; a node reading it twice is listed
        once)."""
        table: dict[Value, list[Node]] = {}
        for node in self.nodes:
            for v in dict.fromkeys(node.input_values()):
                table.setdefault(v, []).append(node)
        return table

    def result_values(self) -> list[Value]:
        """The values a call must produce: outputs, mutations' and grads' new values."""
        out = [v for v in self.outputs if v is not None]
        out += [v for _, v in self.mutations]
        out += [v for _, v in self.grads if v is not None]
        return out

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.op] = counts.get(node.op, 0) + 1
        return counts

    def __len__(self) -> int:
        return len(self.nodes)

    def copy(self) -> Graph:
        """A shallow copy whose node list (and the nodes' fields) passes may change freely;
        Values are shared (they are immutable)."""
        import copy as _copy

        g = _copy.copy(self)
        g.nodes = [Node(n.op, n.inputs, dict(n.attrs), list(n.outputs), n.layout, dict(n.meta))
                   for n in self.nodes]
        for n in g.nodes:  # the copies produce the values now
            for v in n.outputs:
                v.producer = n
        g.placeholders = list(self.placeholders)
        g.constants = dict(self.constants)
        g.constant_names = dict(self.constant_names)
        g.outputs = list(self.outputs)
        g.mutations = list(self.mutations)
        g.grads = list(self.grads)
        return g

    def replace_nodes(self, replaced: Mapping[int, Node | None]) -> None:
        """Put ``replaced[id(node)]`` where each node keyed there stood (``None``: drop it);
        the other nodes keep their places."""
        nodes = []
        for n in self.nodes:
            new = replaced.get(id(n), n)
            if new is not None:
                nodes.append(new)
        self.nodes = nodes

    def substitute(self, mapping: dict[Value, Value]) -> None:
        """Make every reader of a value in ``mapping`` (nodes and the graph's results) read its
        replacement instead (chains ``a -> b -> c`` are followed)."""
        if not mapping:
            return
        for node in self.nodes:
            node.inputs = tuple(resolve(a, mapping) for a in node.inputs)
        self.outputs = [resolve(v, mapping) for v in self.outputs]
        self.mutations = [(ph, resolve(v, mapping)) for ph, v in self.mutations]
        self.grads = [(ph, resolve(v, mapping)) for ph, v in self.grads]

    def verify(self) -> None:
        """Check SSA form: every argument defined before use, every value defined once, and
        each value's ``producer`` the node of this graph that defines it (``None`` for
        placeholders and constants), since passes follow producers to match patterns."""
        defined: set[Value] = {ph.value for ph in self.placeholders} | set(self.constants)
        for v in defined:
            if v.producer is not None:
                raise ValueError(f"%{v.id} is a placeholder or constant of {self.name} but "
                                 f"names {v.producer!r} as its producer")
        for node in self.nodes:
            for v in node.input_values():
                if v not in defined:
                    raise ValueError(f"graph is not in SSA order: {node!r} reads %{v.id} before "
                                     "it is defined")
            for v in node.outputs:
                if v in defined:
                    raise ValueError(f"%{v.id} is defined twice")
                if v.producer is not node:
                    raise ValueError(f"%{v.id}, an output of {node!r}, names {v.producer!r} as "
                                     "its producer")
                defined.add(v)
        for v in self.result_values():
            if v not in defined:
                raise ValueError(f"the graph's result %{v.id} is never defined")

    def __str__(self) -> str:
        from ._format import format_graph

        return format_graph(self)

    def __pullback_view__(self, kind: str) -> str:
        """What ``pullback.debug.visualize`` (``"text"``) and ``to_dot`` (``"dot"``) show."""
        from ._format import format_graph, to_dot

        return format_graph(self) if kind == "text" else to_dot(self)
