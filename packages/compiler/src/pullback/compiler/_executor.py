"""Replaying a graph without dispatch: the graph becomes one generated Python function.

As torch.fx's code generation does, :func:`lower` writes the graph out as straight-line Python:
one line per node calling the op's backend kernel on arrays held in local variables, each
variable deleted after its last use so that memory is freed as in eager mode. No Tensor, graph
node, mode check or kernel look-up is left at run time: a call costs the kernels plus one Python
call per node (and one per fused group, which is the point of fusion).

An op may lower itself: a ``"compiler.lower"`` rule, ``rule(node, device_type)``, returns the
callable for that node (the compiler's fused ops build their kernels this way, once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from pullback._host_memory import advise_heap_growth
from pullback.backends import get_backend
from pullback.registry import get_op

from ._ir import Graph, Node, Value

LOWER_RULE = "compiler.lower"


@dataclass(eq=False)
class Program:
    """A lowered graph: ``run(inputs)`` takes the placeholders' arrays (and scalars) in the
    graph's order and returns the arrays of ``graph.result_values()``."""

    run: Callable[[list[Any]], list[Any]]
    source: str
    n_calls: int


def kernel_for(node: Node, device: str) -> tuple[Callable[..., Any], bool]:
    """The callable of a node, and whether it takes the node's attributes as keywords."""
    op = get_op(node.op)
    lower_rule = op.rules.get(LOWER_RULE)
    if lower_rule is not None:
        return lower_rule(node, device), False
    return op.kernel_for(device), True


class _Writer:
    """Names for values and for the objects the generated code refers to."""

    def __init__(self) -> None:
        self.globals: dict[str, Any] = {}
        self.names: dict[Value, str] = {}

    def value(self, v: Value) -> str:
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = f"v{len(self.names)}"
        return name

    def literal(self, x: Any) -> str:
        if x is None or isinstance(x, (bool, int, str)):
            return repr(x)
        if isinstance(x, float) and math.isfinite(x):
            return repr(x)
        if isinstance(x, Value):
            return self.value(x)
        if isinstance(x, tuple):
            inner = ", ".join(self.literal(e) for e in x)
            return f"({inner}{',' if len(x) == 1 else ''})"
        return self.bind(x, "c")

    def bind(self, obj: Any, prefix: str) -> str:
        name = f"{prefix}{len(self.globals)}"
        self.globals[name] = obj
        return name


def lower(graph: Graph, wrap: Callable[[Node, Callable[..., Any]], Callable[..., Any]] | None
          = None, gemm: str = "auto") -> Program:
    """Generate the replay function of ``graph``. Its matrix products run on the process's GEMM
    provider, as eager's (``gemm`` is checked against it, see :func:`pullback.compiler.compile`);
    on MKL its product epilogues run block by block. ``wrap(node, kernel)``, when given,
    returns what the program calls for ``node`` instead of ``kernel`` (a profiler's timer)."""
    from ._gemm import faster_products, provider

    w = _Writer()
    device = graph.device
    products = faster_products(device) if provider(gemm) == "mkl" else None
    w.globals["asarray"] = get_backend(device).xp.asarray
    results = graph.result_values()
    keep = set(results)
    last_use: dict[Value, int] = {}
    for i, node in enumerate(graph.nodes):
        for v in node.input_values():
            last_use[v] = i
    lines = ["def run(inputs):"]
    if device == "cpu":  # a heap the last run grew gets huge pages (see pullback._host_memory)
        w.globals["advise_heap_growth"] = advise_heap_growth
        lines.append("    advise_heap_growth()")
    if graph.placeholders:
        names = ", ".join(w.value(ph.value) for ph in graph.placeholders)
        lines.append(f"    {names}, = inputs")
    for value, array in graph.constants.items():
        w.names[value] = w.bind(array, "k")
    for i, node in enumerate(graph.nodes):
        kernel, takes_attrs = kernel_for(node, device)
        if products is not None:
            kernel = products(node, kernel)
        if wrap is not None:
            kernel = wrap(node, kernel)
        call = _call(w, node, w.bind(kernel, "f"), takes_attrs)
        lines += ["    " + line for line in _assign(w, node, call)]
        dead = [v for v in dict.fromkeys(node.input_values())
                if last_use.get(v) == i and v not in keep and v not in graph.constants]
        dead += [v for v in node.outputs if v not in last_use and v not in keep]
        if dead:
            lines.append("    del " + ", ".join(w.value(v) for v in dead))
    lines.append("    return [" + ", ".join(w.literal(v) for v in results) + "]")
    source = "\n".join(lines) + "\n"
    namespace = dict(w.globals)
    exec(compile(source, f"<pullback.compiler {graph.name}>", "exec"), namespace)  # noqa: S102
    return Program(namespace["run"], source, len(graph.nodes))


def _call(w: _Writer, node: Node, kernel: str, takes_attrs: bool) -> str:
    args = [w.literal(a) for a in node.inputs]
    if takes_attrs:
        args += [f"{k}={w.literal(v)}" for k, v in node.attrs.items()]
    return f"{kernel}({', '.join(args)})"


def _assign(w: _Writer, node: Node, call: str) -> list[str]:
    outs = [w.value(v) for v in node.outputs]
    if node.layout == "aux":
        if len(outs) == 1:
            return [f"{outs[0]} = asarray({call}[0])"]
        return [f"{outs[0]}, _saved = {call}",
                f"{', '.join(outs[1:])}, = [s for s in _saved if s is not None]",
                f"{outs[0]} = asarray({outs[0]})"]
    if isinstance(node.layout, tuple):
        lines = [f"_result = {call}"]
        lines += [f"{name} = _result[{p}]" for name, p in zip(outs, node.layout)]
        return lines
    # Reductions to a 0-d result give a NumPy scalar: make it an array, as dispatch does.
    if node.outputs[0].ndim == 0:
        return [f"{outs[0]} = asarray({call})"]
    return [f"{outs[0]} = {call}"]


def run_graph(graph: Graph, *inputs: Any) -> list[Any]:
    """Run a graph on the arrays (or numbers) of its placeholders, in order; the arrays of
    ``graph.result_values()`` (what the round-trip tests compare with eager results)."""
    return lower(graph).run(list(inputs))
