"""Readable views of a :class:`~pullback.compiler.Graph`: text (``print(graph)``) and DOT."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._ir import Graph, Node, Value

_MAX_ATTR = 48


class _Names(dict):
    """Value -> display number, in order of definition (ids are global; numbers per graph)."""

    def __missing__(self, value: Value) -> str:
        name = self[value] = f"%{len(self)}"
        return name


def numbering(graph: Graph) -> _Names:
    names = _Names()
    for ph in graph.placeholders:
        names[ph.value]  # noqa: B018 - numbers in order of definition
    for value in graph.constants:
        names[value]  # noqa: B018
    for node in graph.nodes:
        for v in node.outputs:
            names[v]  # noqa: B018
    return names


def _arg(a: Any, names: _Names) -> str:
    if isinstance(a, Value):
        return names[a]
    if isinstance(a, tuple):
        return "(" + ", ".join(_arg(x, names) for x in a) + ("," if len(a) == 1 else "") + ")"
    return repr(a)


def _attr(v: Any) -> str:
    if isinstance(v, np.dtype) or isinstance(v, type):
        text = np.dtype(v).name
    elif hasattr(v, "summary"):  # the compiler's fused programs describe themselves
        text = v.summary()
    else:
        text = repr(v)
    return text if len(text) <= _MAX_ATTR else text[:_MAX_ATTR - 3] + "..."


def node_text(node: Node, names: _Names | None = None) -> str:
    """``%5: float32[32, 20] = relu(%4)`` (several outputs are listed comma-separated)."""
    names = _Names() if names is None else names
    outs = ", ".join(f"{names[v]}: {v.type_text()}" for v in node.outputs)
    args = ", ".join(_arg(a, names) for a in node.inputs)
    attrs = ", ".join(f"{k}={_attr(v)}" for k, v in node.attrs.items())
    text = f"{outs} = {node.op}({args})"
    if attrs:
        text += f" {{{attrs}}}"
    return text


def format_graph(graph: Graph) -> str:
    """The whole graph: placeholders, constants, nodes, then what a call gives back."""
    names = numbering(graph)
    lines = [f"graph {graph.name}({len(graph.placeholders)} inputs, {len(graph.nodes)} nodes) {{"]
    for ph in graph.placeholders:
        lines.append(f"    {names[ph.value]}: {ph.value.type_text()} = {ph.kind} {ph.name}")
    for value in graph.constants:
        named = graph.constant_names.get(value)
        lines.append(f"    {names[value]}: {value.type_text()} = constant"
                     + (f" {named}" if named else ""))
    for node in graph.nodes:
        lines.append("    " + node_text(node, names))
    outs = ", ".join("None" if v is None else names[v] for v in graph.outputs)
    lines.append(f"    return ({outs})")
    for ph, v in graph.mutations:
        lines.append(f"    write {names[v]} into {ph.name}")
    for ph, gv in graph.grads:
        lines.append(f"    {ph.name}.grad = {'None' if gv is None else names[gv]}")
    lines.append("}")
    return "\n".join(lines)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: Graph) -> str:
    """The graph in Graphviz DOT: placeholders and constants on top, data along the arrows."""
    lines = ["digraph compiled {", '  node [fontname="Helvetica", fontsize=10];']
    where: dict[Value, str] = {}
    for i, ph in enumerate(graph.placeholders):
        where[ph.value] = f"in{i}"
        label = f"{ph.kind} {ph.name}\n{ph.value.type_text()}"
        lines.append(f'  in{i} [label={_quote(label)}, style=filled, fillcolor="lightblue"];')
    for i, value in enumerate(graph.constants):
        where[value] = f"c{i}"
        lines.append(f'  c{i} [label={_quote("constant " + value.type_text())}, '
                     'style=filled, fillcolor="lightgray"];')
    for i, node in enumerate(graph.nodes):
        label = node.op + "\n" + ", ".join(v.type_text() for v in node.outputs)
        lines.append(f"  n{i} [label={_quote(label)}, shape=box];")
        for v in dict.fromkeys(node.input_values()):
            if v in where:
                lines.append(f"  {where[v]} -> n{i};")
        for v in node.outputs:
            where[v] = f"n{i}"
    for i, v in enumerate(graph.result_values()):
        lines.append(f"  out{i} [label={_quote('result ' + v.type_text())}, shape=doubleoctagon];")
        if v in where:
            lines.append(f"  {where[v]} -> out{i};")
    lines.append("}")
    return "\n".join(lines) + "\n"
