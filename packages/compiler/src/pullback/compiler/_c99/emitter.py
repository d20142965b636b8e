"""Turning an inference graph into C kernels: where each value lives, and what a rule writes.

Every node becomes one ``static`` C function (a *kernel*) whose parameters are ``restrict``
pointers to the arrays it reads and writes, specialised to the node's shapes (sizes are
literals, so the compiler knows every trip count). An op's ``"c99"`` rule writes the kernel's
body through a :class:`KernelBuilder`; elementwise ops without one are written from their
``"c_scalar"`` rules through the fused-loop generator (see :mod:`.elementwise`).

Values live in the caller's input and output arrays, in static constant arrays (weights), or in
the arena (everything else, planned by :mod:`.arena`). A ``reshape`` is no kernel at all: its
output is its input's memory read with another shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pullback.registry import OPS

from .._export import where
from .._ir import Graph, Node, Value
from ..errors import ExportError
from .arena import Buffer, Plan, plan
from .names import Namer, c_comment

C99_RULE = "c99"
CTYPES = {"float32": "float", "float64": "double", "int64": "int64_t", "int32": "int32_t",
          "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t", "bool": "unsigned char"}
DTYPE_OF_CTYPE = {v: k for k, v in CTYPES.items()}
# ops whose output is their input's memory unchanged (the IR is SSA: nothing writes it later)
ALIAS_OPS = frozenset({"reshape", "copy"})
_MAX_INDEX = 2**31 - 1  # kernels index with int


def ctype_of(dtype: Any) -> str:
    name = np.dtype(dtype).name
    if name not in CTYPES:
        raise ExportError(f"export_c: dtype {name} has no C type here (supported: "
                          f"{', '.join(CTYPES)})")
    return CTYPES[name]


@dataclass(frozen=True)
class Ref:
    """What a kernel parameter is bound to: a value, a scratch buffer, or a static array."""

    kind: str  # "value", "scratch", "static"
    target: Any


@dataclass(eq=False)
class Kernel:
    """One node's C function: parameters (declaration, what it is bound to) and body."""

    node: Node
    step: int
    name: str
    params: list[tuple[str, Ref]] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    reads: list[Value] = field(default_factory=list)
    writes: list[Value] = field(default_factory=list)
    scratch: list[tuple[int, str]] = field(default_factory=list)  # (count, ctype)

    def text(self) -> str:
        decls = ", ".join(d for d, _ in self.params) or "void"
        head = f"/* {c_comment(describe(self.node))} */\nstatic void {self.name}({decls}) {{"
        return "\n".join([head] + ["    " + line for line in self.body] + ["}"])


def describe(node: Node) -> str:
    ins = ", ".join(f"%{a.id}" if isinstance(a, Value) else repr(a) for a in node.inputs)
    outs = ", ".join(f"%{v.id}: {v.type_text()}" for v in node.outputs)
    return f"{outs} = {node.op}({ins})"


class KernelBuilder:
    """What a ``"c99"`` rule writes a kernel with.

    ``read(v)`` / ``write(v)`` give the name of a pointer parameter for a value's elements
    (row-major, contiguous); ``scratch(n, ctype)`` a temporary array that lives during this
    kernel only; ``static(array)`` a new constant array (a weight in the layout the kernel
    wants); ``constant(v)`` the array of a value that is a constant (else None); ``line``
    adds C to the body; ``helper`` a function shared by kernels (written once).
    """

    def __init__(self, emitter: Emitter, kernel: Kernel) -> None:
        self.emitter = emitter
        self.kernel = kernel
        self._names: dict[tuple[str, Any], str] = {}

    # -- parameters --------------------------------------------------------------------------
    def read(self, v: Value) -> str:
        return self._param("r", v, const=True)

    def write(self, v: Value) -> str:
        return self._param("w", v, const=False)

    def _param(self, mode: str, v: Value, const: bool) -> str:
        key = (mode, v)
        if key not in self._names:
            name = ("x" if const else "y") + str(sum(1 for m, _ in self._names if m == mode))
            qualifier = "const " if const else ""
            self.kernel.params.append((f"{qualifier}{ctype_of(v.dtype)} *restrict {name}",
                                       Ref("value", v)))
            (self.kernel.reads if const else self.kernel.writes).append(v)
            self._names[key] = name
        return self._names[key]

    def scratch(self, count: int, ctype: str) -> str:
        index = len(self.kernel.scratch)
        self.kernel.scratch.append((int(count), ctype))
        name = f"tmp{index}"
        self.kernel.params.append((f"{ctype} *restrict {name}", Ref("scratch", index)))
        return name

    def static(self, array: np.ndarray, name: str) -> str:
        """A new static const array holding ``array`` (row-major), passed as a parameter."""
        symbol = self.emitter.add_static(np.ascontiguousarray(array), name)
        param = f"k{len(self.kernel.params)}"
        self.kernel.params.append((f"const {ctype_of(array.dtype)} *restrict {param}",
                                   Ref("static", symbol)))
        return param

    def constant(self, v: Any) -> np.ndarray | None:
        if isinstance(v, Value) and v in self.emitter.graph.constants:
            return np.asarray(self.emitter.graph.constants[v])
        return None

    def constant_name(self, v: Value) -> str:
        return self.emitter.graph.constant_names.get(v, f"c{v.id}")

    # -- code ---------------------------------------------------------------------------------
    def line(self, *lines: str) -> None:
        self.kernel.body.extend(lines)

    def helper(self, key: str, make: Callable[[str], str]) -> str:
        """The name of a shared helper function; ``make(name)`` writes it the first time."""
        return self.emitter.add_helper(key, make)

    def fresh(self, text: str) -> str:
        return self.emitter.namer.fresh(f"{self.emitter.prefix}_{text}")

    @property
    def node(self) -> Node:
        return self.kernel.node

    def fail(self, why: str) -> ExportError:
        return ExportError(f"export_c: {self.node.op}: {why}{where(self.node)}")


@dataclass
class Storage:
    """Where a value's elements are: ``"input"``/``"output"`` (the entry point's arrays,
    ``index``), ``"static"`` (``symbol``), ``"arena"`` (``ctype`` arena at ``offset``)."""

    kind: str
    index: int = 0
    symbol: str = ""
    ctype: str = ""
    offset: int = 0


class Emitter:
    """Builds the kernels of a graph and plans its memory."""

    def __init__(self, graph: Graph, prefix: str, namer: Namer) -> None:
        self.graph = graph
        self.prefix = prefix
        self.namer = namer
        self.kernels: list[Kernel] = []
        self.statics: dict[str, np.ndarray] = {}
        self.static_comments: dict[str, str] = {}
        self.helpers: dict[str, tuple[str, str]] = {}  # key -> (name, text)
        self.alias: dict[Value, Value] = {}
        self.storage: dict[Value, Storage] = {}
        self.plans: dict[str, Plan] = {}
        self.scratch_at: dict[tuple[int, int], tuple[str, int]] = {}
        self.copies: list[tuple[int, Value]] = []  # outputs copied at the end: (output, value)
        self._const_symbols: dict[Value, str] = {}

    # -- statics and helpers -----------------------------------------------------------------
    def add_static(self, array: np.ndarray, name: str) -> str:
        symbol = self.namer.fresh(f"{self.prefix}_w_{name}")
        self.statics[symbol] = array
        self.static_comments[symbol] = name
        return symbol

    def add_helper(self, key: str, make: Callable[[str], str]) -> str:
        if key not in self.helpers:
            name = self.namer.fresh(f"{self.prefix}_{key}")
            self.helpers[key] = (name, make(name))
        return self.helpers[key][0]

    # -- building -----------------------------------------------------------------------------
    def root(self, v: Value) -> Value:
        while v in self.alias:
            v = self.alias[v]
        return v

    def build(self) -> None:
        from .rules import c99_rule

        for node in self.graph.nodes:
            if node.op in ALIAS_OPS and len(node.outputs) == 1 and isinstance(node.inputs[0], Value):
                self.alias[node.output] = node.inputs[0]
                continue
            for v in node.outputs:
                if v.size > _MAX_INDEX:
                    raise ExportError(f"export_c: {node.op}: output of {v.size} elements is too "
                                      f"large for int indices{where(node)}")
            rule = c99_rule(node)
            kernel = Kernel(node, len(self.kernels), self.namer.fresh(
                f"{self.prefix}_k{len(self.kernels)}_{node.op.split('.')[-1]}"))
            rule(node, KernelBuilder(self, kernel))
            self.kernels.append(kernel)
        self._place()

    def _place(self) -> None:
        graph = self.graph
        for i, ph in enumerate(graph.placeholders):
            self.storage[ph.value] = Storage("input", index=i)
        for v in graph.constants:
            self.storage[v] = Storage("static")  # symbol given when first used
        # outputs: a value a kernel computes is written straight into the caller's array
        for j, v in enumerate(graph.outputs):
            r = self.root(v)
            if r in self.storage or r.producer is None:
                self.copies.append((j, v))
            else:
                self.storage[r] = Storage("output", index=j)
        # the rest: arena buffers alive from their kernel to their last reader's
        first: dict[Value, int] = {}
        last: dict[Value, int] = {}
        for kernel in self.kernels:
            for v in kernel.writes:
                first.setdefault(self.root(v), kernel.step)
            for v in kernel.reads + kernel.writes:
                last[self.root(v)] = kernel.step
        end = len(self.kernels)
        for _, v in self.copies:
            last[self.root(v)] = end
        buffers: dict[str, list[Buffer]] = {}
        for v, start in first.items():
            if v in self.storage:
                continue
            ctype = ctype_of(v.dtype)
            buffers.setdefault(ctype, []).append(
                Buffer(v, v.size, v.dtype.itemsize, start, last.get(v, start)))
        for kernel in self.kernels:
            for s, (count, ctype) in enumerate(kernel.scratch):
                itemsize = np.dtype(DTYPE_OF_CTYPE[ctype]).itemsize
                buffers.setdefault(ctype, []).append(
                    Buffer(("scratch", kernel.step, s), count, itemsize, kernel.step, kernel.step))
        for ctype, bufs in buffers.items():
            self.plans[ctype] = plan(bufs)
            for b in bufs:
                if isinstance(b.key, Value):
                    self.storage[b.key] = Storage("arena", ctype=ctype, offset=b.offset)
                else:
                    self.scratch_at[b.key[1:]] = (ctype, b.offset)

    # -- pointer expressions ------------------------------------------------------------------
    def arena_symbol(self, ctype: str) -> str:
        return f"{self.prefix}_arena_{ctype.replace(' ', '_')}"

    def pointer(self, v: Value) -> str:
        r = self.root(v)
        s = self.storage[r]
        if s.kind == "input":
            return f"in{s.index}"
        if s.kind == "output":
            return f"out{s.index}"
        if s.kind == "static":
            if r not in self._const_symbols:
                self._const_symbols[r] = self.add_static(
                    np.ascontiguousarray(self.graph.constants[r]),
                    self.graph.constant_names.get(r, f"c{r.id}"))
            return self._const_symbols[r]
        return f"({self.arena_symbol(s.ctype)} + {s.offset})"

    def argument(self, ref: Ref, step: int) -> str:
        if ref.kind == "value":
            return self.pointer(ref.target)
        if ref.kind == "static":
            return ref.target
        ctype, offset = self.scratch_at[(step, ref.target)]
        return f"({self.arena_symbol(ctype)} + {offset})"

    def arena_bytes(self) -> int:
        return sum(p.nbytes for p in self.plans.values())

    def naive_bytes(self) -> int:
        return sum(p.naive_bytes for p in self.plans.values())



def has_c99_support(node: Node) -> bool:
    op = OPS.get(node.op)
    return op is not None and (C99_RULE in op.rules or "c_scalar" in op.rules)
