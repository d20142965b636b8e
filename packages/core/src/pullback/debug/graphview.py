"""Views of the graph behind a tensor: an ASCII tree for the terminal, Graphviz DOT for a picture.

Both views walk the recorded nodes from the tensor back to the leaves (iteratively: a deep graph
does not hit Python's recursion limit). A node shows its op, output shape and dtype; an input
shows whether it requires grad, its name when one is given, and its gradient norm once backward
has filled it (leaves always keep ``.grad``; other tensors only after ``retain_grad()``). A node
used by several consumers is printed once and referenced by its number afterwards.

After a backward without ``retain_graph=True`` the graph is gone; the views say so.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .._files import write_atomic
from ..autograd.engine import recorded_inputs
from ..graph import OutputSlot
from ..tensor import Tensor

_MAX_ATTR_CHARS = 40
_RELEASED = "graph released by backward (pass retain_graph=True to view it afterwards)"


@dataclass
class _Input:
    """One argument of a node: another node, a leaf Tensor, a constant Tensor or a scalar."""

    kind: str                    # "node", "leaf", "constant" or "scalar"
    node: Any = None             # the producing node, for kind "node"
    tensor: Tensor | None = None
    shape: tuple[int, ...] | None = None
    dtype: str = ""
    output_index: int | None = None  # for outputs of multi-output Functions
    value: Any = None            # for kind "scalar"


def _name_table(names: Any) -> dict[int, str]:
    """``id(tensor) -> name`` from a mapping, or from a model's ``named_parameters()``."""
    if names is None:
        return {}
    if hasattr(names, "named_parameters"):
        items: Iterable[tuple[str, Any]] = names.named_parameters()
    elif isinstance(names, Mapping):
        items = names.items()
    else:
        raise TypeError(
            f"names must be a mapping of name -> Tensor or a model with named_parameters(), "
            f"got {type(names).__name__}")
    return {id(t): name for name, t in items}


def _inputs(node: Any) -> list[_Input]:
    """The arguments of a recorded node (an op's Node or a Function's node)."""
    if node.edges is None:
        return []
    if node.op is None:
        args = node.args
        arrays = [a.array if isinstance(a, Tensor) else a for a in args]
    else:
        args, arrays = recorded_inputs(node), node.arrays
    out = []
    for arg, array, edge in zip(args, arrays, node.edges):
        shape = tuple(array.shape) if hasattr(array, "shape") else None
        dtype = str(array.dtype) if hasattr(array, "dtype") else ""
        if edge is None:
            if isinstance(arg, Tensor):
                out.append(_Input("constant", tensor=arg, shape=shape, dtype=dtype))
            else:
                out.append(_Input("scalar", value=arg))
        elif isinstance(edge, Tensor):
            out.append(_Input("leaf", tensor=edge, shape=shape, dtype=dtype))
        elif edge.__class__ is OutputSlot:
            out.append(_Input("node", node=edge.node, shape=shape, dtype=dtype,
                              output_index=edge.index))
        else:
            out.append(_Input("node", node=edge, shape=shape, dtype=dtype))
    return out


def _grad_norm(t: Tensor | None) -> float | None:
    if t is None or t.grad is None:
        return None
    g = t.grad.device.backend.to_host(t.grad.array)
    return float(math.sqrt(float((abs(g.astype("float64")) ** 2).sum())))


def _retained(node: Any, index: int | None) -> Tensor | None:
    """The tensor whose ``retain_grad()`` keeps the gradient of this node's output, if alive."""
    ref = node.retained if index is None else node.output_retained.get(index)
    return ref() if ref is not None else None


def _attrs_text(node: Any) -> str:
    if node.op is None or not node.attrs:
        return ""
    parts = []
    for k, v in node.attrs.items():
        if k == "key" or v is None or v is False:  # index keys are long; None/False are defaults
            continue
        text = f"{k}={v!r}"
        parts.append(text if len(text) <= _MAX_ATTR_CHARS else text[:_MAX_ATTR_CHARS - 3] + "...")
    return " ".join(parts)


def _fmt_shape(shape: tuple[int, ...] | None, dtype: str) -> str:
    if shape is None:
        return dtype
    return f"{tuple(shape)} {dtype}".strip()


def _fmt_grad(norm: float | None) -> str:
    return "" if norm is None else f"  |grad|={norm:.4g}"


def _leaf_text(inp: _Input, names: dict[int, str]) -> str:
    if inp.kind == "scalar":
        return f"scalar {inp.value!r}"
    t = inp.tensor
    assert t is not None
    name = names.get(id(t))
    label = f"{name}: " if name else ""
    if inp.kind == "leaf":
        return f"{label}leaf {_fmt_shape(inp.shape, inp.dtype)} requires_grad{_fmt_grad(_grad_norm(t))}"
    made = "" if t._node is None else f", made by {t._node.name} (detached)"
    return f"{label}constant {_fmt_shape(inp.shape, inp.dtype)} (no grad{made})"


def _node_text(node: Any, number: int, shape: Any, dtype: str, index: int | None) -> str:
    kind = "Function " if node.op is None else ""
    out = "" if index is None else f" output {index}"
    attrs = _attrs_text(node)
    text = f"[{number}] {kind}{node.name}{out} -> {_fmt_shape(shape, dtype)}"
    if attrs:
        text += f"  ({attrs})"
    text += _fmt_grad(_grad_norm(_retained(node, index)))
    if node.edges is None:
        text += f"  <{_RELEASED}>"
    return text


def _root_input(tensor: Tensor) -> _Input:
    edge = tensor._node
    shape, dtype = tuple(tensor.shape), str(tensor.dtype)
    if edge is None:
        kind = "leaf" if tensor._requires_grad else "constant"
        return _Input(kind, tensor=tensor, shape=shape, dtype=dtype)
    if edge.__class__ is OutputSlot:
        return _Input("node", node=edge.node, shape=shape, dtype=dtype, output_index=edge.index)
    return _Input("node", node=edge, shape=shape, dtype=dtype)


def _own_view(obj: Any, kind: str) -> str | None:
    """The view a graph object draws of itself (``__pullback_view__(kind)``, ``kind`` being
    ``"text"`` or ``"dot"``): the compiler's traced graphs do."""
    draw = getattr(type(obj), "__pullback_view__", None)
    return None if draw is None else draw(obj, kind)


def format_graph(tensor: Tensor, names: Any = None, max_depth: int | None = None) -> str:
    """The ASCII tree of the graph behind ``tensor`` (what :func:`visualize` prints), or the
    text of a graph object that draws itself."""
    if not isinstance(tensor, Tensor):
        text = _own_view(tensor, "text")
        if text is not None:
            return text
        raise TypeError(f"visualize: expected a Tensor, got {type(tensor).__name__}")
    table = _name_table(names)
    numbers: dict[Any, int] = {}
    lines: list[str] = []
    distinct: dict[str, set[int]] = {"leaf": set(), "constant": set()}  # ids of tensors
    # (input, prefix for its own line, prefix for its children, depth)
    stack: list[tuple[_Input, str, str, int]] = [(_root_input(tensor), "", "", 0)]
    while stack:
        inp, head, tail, depth = stack.pop()
        if inp.kind != "node":
            if inp.kind in distinct:
                distinct[inp.kind].add(id(inp.tensor))
            lines.append(head + _leaf_text(inp, table))
            continue
        node = inp.node
        seen = numbers.get(node)
        if seen is not None:
            out = "" if inp.output_index is None else f" output {inp.output_index}"
            lines.append(f"{head}[{seen}] {node.name}{out} (shown above)")
            continue
        numbers[node] = len(numbers) + 1
        lines.append(head + _node_text(node, numbers[node], inp.shape, inp.dtype,
                                       inp.output_index))
        children = _inputs(node)
        if max_depth is not None and depth >= max_depth and children:
            lines.append(f"{tail}└── ... (max_depth={max_depth} reached)")
            continue
        for k in range(len(children) - 1, -1, -1):
            last = k == len(children) - 1
            stack.append((children[k], tail + ("└── " if last else "├── "),
                          tail + ("    " if last else "│   "), depth + 1))
    root_name = table.get(id(tensor))
    what = (root_name + " " if root_name else "") + _fmt_shape(tuple(tensor.shape),
                                                               str(tensor.dtype))
    summary = (f"graph of {what}: {len(numbers)} ops, {len(distinct['leaf'])} leaves requiring grad, "
               f"{len(distinct['constant'])} constant tensors")
    return "\n".join([summary, *lines])


def visualize(tensor: Tensor, names: Any = None, max_depth: int | None = None) -> str:
    """Print the graph behind ``tensor`` as an ASCII tree, and return the text.

    Args:
        tensor: any Tensor (a leaf prints as one line).
        names: names for leaves: a mapping ``name -> Tensor``, or a model with
            ``named_parameters()`` (``visualize(loss, names=model)``).
        max_depth: stop expanding below this depth (``None``: the whole graph).

    Example::

        >>> import pullback
        >>> x = pullback.tensor([1.0, 2.0], requires_grad=True)
        >>> _ = visualize((x * x).sum(), names={"x": x})
        graph of () float32: 2 ops, 1 leaves requiring grad, 0 constant tensors
        [1] sum -> () float32
        └── [2] mul -> (2,) float32
            ├── x: leaf (2,) float32 requires_grad
            └── x: leaf (2,) float32 requires_grad
    """
    text = format_graph(tensor, names, max_depth)
    print(text)
    return text


# -- Graphviz ------------------------------------------------------------------------------------
def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(tensor: Tensor, path: str | Path | None = None, names: Any = None) -> str:
    """The graph behind ``tensor`` in Graphviz DOT; written to ``path`` when given.

    A ``path`` ending in ``.svg``, ``.png`` or ``.pdf`` is rendered with Graphviz's ``dot``
    program (the DOT source goes next to it, with the suffix ``.dot``); without ``dot`` on the
    PATH a :class:`RuntimeWarning` says so and only the DOT file is written. Any other suffix
    receives the DOT text itself.

    Data flows along the arrows: from inputs to the ops that read them, down to the tensor.
    A graph object that draws itself (``__pullback_view__``: pullback.compiler's graphs) is
    accepted in place of the tensor.
    """
    if not isinstance(tensor, Tensor):
        own = _own_view(tensor, "dot")
        if own is None:
            raise TypeError(f"to_dot: expected a Tensor, got {type(tensor).__name__}")
        if path is not None:
            _write(own, Path(path))
        return own
    table = _name_table(names)
    ids: dict[Any, str] = {}
    lines = ["digraph pullback {", '  node [fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];']
    root = _root_input(tensor)
    lines.append(f"  out [label={_quote('output ' + _fmt_shape(root.shape, root.dtype))}, "
                 "shape=doubleoctagon];")
    leaf_ids: dict[int, str] = {}
    scalars = 0
    # (input, consumer id, edge label); children pushed in reverse: numbers match visualize()
    work: list[tuple[_Input, str, str]] = [(root, "out", "")]
    while work:
        inp, consumer, label = work.pop()
        if inp.kind == "node":
            node = inp.node
            source_id = ids.get(node)
            if source_id is None:
                source_id = ids[node] = f"op{len(ids) + 1}"
                text = _node_text(node, len(ids), inp.shape, inp.dtype, None)
                text = text.replace(" -> ", "\n").replace("  ", "\n")
                shape = "box3d" if node.op is None else "box"
                lines.append(f"  {source_id} [label={_quote(text)}, shape={shape}];")
                children = _inputs(node)
                for k in range(len(children) - 1, -1, -1):
                    work.append((children[k], source_id, str(k) if len(children) > 1 else ""))
        else:
            key = id(inp.tensor) if inp.kind != "scalar" else None
            source_id = leaf_ids.get(key) if key is not None else None
            if source_id is None:
                scalars += key is None
                source_id = f"s{scalars}" if key is None else f"in{len(leaf_ids) + 1}"
                if key is not None:
                    leaf_ids[key] = source_id
                text = _leaf_text(inp, table).replace(": leaf", "\nleaf")
                text = text.replace(": constant", "\nconstant").replace("  ", "\n")
                style = {"leaf": 'style=filled, fillcolor="lightblue"',
                         "constant": 'style=filled, fillcolor="lightgray"',
                         "scalar": "shape=plaintext"}[inp.kind]
                lines.append(f"  {source_id} [label={_quote(text)}, {style}];")
        out_label = "" if inp.output_index is None else f"out {inp.output_index}"
        joined = ", ".join(x for x in (label, out_label) if x)
        edge_attr = f" [label={_quote(joined)}]" if joined else ""
        lines.append(f"  {source_id} -> {consumer}{edge_attr};")
    lines.append("}")
    source = "\n".join(lines) + "\n"
    if path is not None:
        _write(source, Path(path))
    return source


def _write(source: str, path: Path) -> None:
    # never through a link planted where the file goes (pullback._files)
    if path.suffix not in (".svg", ".png", ".pdf"):
        write_atomic(path, source, sync=False)
        return
    dot_path = path.with_suffix(".dot")
    write_atomic(dot_path, source, sync=False)
    program = shutil.which("dot")
    if program is None:
        warnings.warn(f"to_dot: Graphviz 'dot' is not on the PATH, so {path} was not rendered; "
                      f"the DOT source is in {dot_path}", RuntimeWarning, stacklevel=3)
        return
    rendered = subprocess.run([program, f"-T{path.suffix[1:]}", str(dot_path)], check=True,
                              capture_output=True).stdout
    write_atomic(path, rendered, sync=False)
