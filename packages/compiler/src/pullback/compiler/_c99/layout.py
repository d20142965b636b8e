"""Kernels that move data: permutes, slices, broadcasts, flips, pads, concatenation, gathers
(``take``), and reductions over axes.

A *movement* op (one input, static attributes) is written without a rule of its own: its NumPy
kernel runs once at export time on ``arange(1, n + 1)`` shaped as the input, which says where
every output element comes from (0 where the op fills instead: a pad, a triangle). When the
sources are an affine function of the output's index (a permute, a strided slice, a broadcast,
a flip) the kernel is a strided copy; otherwise it reads through a table of source positions.
The op's own kernel is the specification, so the C cannot disagree with it about semantics.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pullback.registry import get_op

from .._c_rules import c_literal
from .._ir import Node, Value
from .emitter import KernelBuilder, ctype_of

# op -> the attribute that holds the value it fills with (None: fills with 0)
MOVEMENT_OPS: dict[str, str | None] = {"permute": None, "swapaxes": None, "getitem": None,
                                       "broadcast_to": None, "flip": None, "roll": None,
                                       "pad": "value", "tril": None, "triu": None}


def row_major_strides(shape: Sequence[int]) -> list[int]:
    """Element strides of a contiguous row-major array of ``shape``."""
    strides, step = [], 1
    for s in reversed(shape):
        strides.append(step)
        step *= int(s)
    return strides[::-1]


def _collapse(shape: Sequence[int], *strides: Sequence[int]) -> tuple[list[int], list[list[int]]]:
    """Drop size-1 axes and merge neighbours that are contiguous in every operand."""
    dims: list[int] = []
    out: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if dims and all(s[-1] == st[d] * size for s, st in zip(out, strides)):
            dims[-1] *= size
            for s, st in zip(out, strides):
                s[-1] = st[d]
            continue
        dims.append(int(size))
        for s, st in zip(out, strides):
            s.append(int(st[d]))
    return dims, out


def strided_copy(k: KernelBuilder, dst: str, src: str, shape: Sequence[int], src_offset: int,
                 src_strides: Sequence[int], dst_offset: int = 0,
                 dst_strides: Sequence[int] | None = None) -> None:
    """``dst[dst_offset + i . dst_strides] = src[src_offset + i . src_strides]`` over every
    index ``i`` of ``shape`` (``dst`` contiguous by default)."""
    if int(np.prod(shape, dtype=np.int64)) == 0:
        return
    dst_strides = row_major_strides(shape) if dst_strides is None else dst_strides
    dims, (ds, ss) = _collapse(shape, dst_strides, src_strides)
    if not dims:
        k.line(f"{dst}[{dst_offset}] = {src}[{src_offset}];")
        return
    lines = ["{"]
    indent = "    "
    for d, size in enumerate(dims[:-1]):
        lines.append(f"{indent}for (int i{d} = 0; i{d} < {size}; i{d}++) {{")
        indent += "    "
    src_base = " + ".join([str(src_offset)] + [f"i{d} * {ss[d]}" for d in range(len(dims) - 1)])
    dst_base = " + ".join([str(dst_offset)] + [f"i{d} * {ds[d]}" for d in range(len(dims) - 1)])
    last = len(dims) - 1
    lines.append(f"{indent}const int s = {src_base}, t = {dst_base};")
    lines.append(f"{indent}for (int j = 0; j < {dims[last]}; j++) "
                 f"{dst}[t + j * {ds[last]}] = {src}[s + j * {ss[last]}];")
    for _ in dims[:-1]:
        indent = indent[:-4]
        lines.append(f"{indent}}}")
    lines.append("}")
    k.line(*lines)


def _affine(src: np.ndarray) -> tuple[int, list[int]] | None:
    """``(offset, strides)`` when ``src[i] == offset + i . strides`` for every index ``i``."""
    if src.size == 0:
        return 0, [0] * src.ndim
    offset = int(src.flat[0])
    strides = []
    for d, size in enumerate(src.shape):
        index = [0] * src.ndim
        if size > 1:
            index[d] = 1
        strides.append(int(src[tuple(index)]) - offset if size > 1 else 0)
    expected = np.full(src.shape, offset, dtype=np.int64)
    for d, st in enumerate(strides):
        shape = [1] * src.ndim
        shape[d] = src.shape[d]
        expected = expected + (np.arange(src.shape[d], dtype=np.int64) * st).reshape(shape)
    return (offset, strides) if np.array_equal(expected, src) else None


def movement_rule(node: Node, k: KernelBuilder) -> None:
    """A one-input data-movement op, from its own kernel run on source positions."""
    x, out = node.inputs[0], node.output
    if any(isinstance(a, Value) for a in node.inputs[1:]) or not isinstance(x, Value):
        raise k.fail("indices computed at run time cannot be exported (only static ones)")
    fill_attr = MOVEMENT_OPS[node.op]
    attrs = dict(node.attrs)
    fill = attrs.get(fill_attr, 0) if fill_attr else 0
    if fill_attr:
        attrs[fill_attr] = 0
    positions = np.arange(1, x.size + 1, dtype=np.int64).reshape(x.shape)
    kernel = get_op(node.op).kernel_for("cpu")
    src = np.asarray(kernel(positions, *node.inputs[1:], **attrs)) - 1  # -1: filled
    if src.shape != out.shape:
        raise k.fail(f"its kernel gave shape {src.shape} on positions, not {out.shape}")
    xp, yp = k.read(x), k.write(out)
    pattern = _affine(src) if (src >= 0).all() else None
    if pattern is not None:
        strided_copy(k, yp, xp, out.shape, pattern[0], pattern[1])
        return
    table = k.static(src.reshape(-1).astype(np.int32), f"{node.op}_sources")
    ctype = ctype_of(out.dtype)
    value = c_literal(fill, ctype) if out.dtype.kind == "f" else str(int(fill))
    k.line(f"for (int i = 0; i < {out.size}; i++) {yp}[i] = {table}[i] < 0 ? "
           f"({ctype}){value} : {xp}[{table}[i]];")


def cat_rule(node: Node, k: KernelBuilder) -> None:
    """``cat`` and ``stack``: each input copied into its slab of the output."""
    out = node.output
    axis = node.attrs.get("axis", 0) % (out.ndim if out.ndim else 1)
    yp = k.write(out)
    out_strides = row_major_strides(out.shape)
    start = 0
    for v in node.inputs:
        if not isinstance(v, Value):
            raise k.fail(f"argument {v!r} is not an array")
        shape = v.shape if node.op == "cat" else v.shape[:axis] + (1,) + v.shape[axis:]
        strides = row_major_strides(shape)
        strided_copy(k, yp, k.read(v), shape, 0, strides, start * out_strides[axis],
                     out_strides)
        start += shape[axis]


def take_rule(node: Node, k: KernelBuilder) -> None:
    """``take(a, indices, axis)`` (an embedding look-up): negative indices count from the end,
    as NumPy's; an index out of range gives zeros (C must not read outside the array)."""
    a, indices = node.inputs[0], node.inputs[1]
    axis = node.attrs.get("axis")
    if axis is None or not isinstance(indices, Value) or indices.dtype.kind not in "iu":
        raise k.fail("take needs an axis and integer indices")
    axis %= a.ndim
    outer = int(np.prod(a.shape[:axis], dtype=np.int64))
    inner = int(np.prod(a.shape[axis + 1:], dtype=np.int64))
    n, count = a.shape[axis], indices.size
    ap, ip, yp = k.read(a), k.read(indices), k.write(node.output)
    k.line(f"for (int o = 0; o < {outer}; o++) {{",
           f"    for (int t = 0; t < {count}; t++) {{",
           f"        long long j = (long long){ip}[t];",
           f"        if (j < 0) j += {n};",
           f"        for (int e = 0; e < {inner}; e++)",
           f"            {yp}[(o * {count} + t) * {inner} + e] = (j >= 0 && j < {n}) ? "
           f"{ap}[(o * {n} + (int)j) * {inner} + e] : 0;",
           "    }", "}")


_REDUCTIONS = {"sum": ("0.0", "acc + v"), "mean": ("0.0", "acc + v"),
               "amax": ("-INFINITY", "((acc >= v || acc != acc) ? acc : v)"),
               "amin": ("INFINITY", "((acc <= v || acc != acc) ? acc : v)")}


def reduce_rule(node: Node, k: KernelBuilder) -> None:
    """``sum``, ``mean``, ``amax``, ``amin`` over any axes (sums in double, NaN propagated)."""
    x, out = node.inputs[0], node.output
    if set(node.attrs) - {"axis", "keepdims", "dtype"} or x.dtype.kind != "f":
        raise k.fail(f"attributes {sorted(node.attrs)} or dtype {x.dtype} not handled")
    axis: Any = node.attrs.get("axis")
    axes = tuple(range(x.ndim)) if axis is None else tuple(
        a % x.ndim for a in ((axis,) if isinstance(axis, int) else axis))
    kept = [d for d in range(x.ndim) if d not in axes]
    strides = row_major_strides(x.shape)
    count = int(np.prod([x.shape[d] for d in axes], dtype=np.int64))
    init, step = _REDUCTIONS[node.op]
    acc_type = "double"
    xp, yp = k.read(x), k.write(out)
    lines = ["{", "    int o = 0;"]
    indent = "    "
    for d in kept:
        lines.append(f"{indent}for (int i{d} = 0; i{d} < {x.shape[d]}; i{d}++) {{")
        indent += "    "
    base = " + ".join(["0"] + [f"i{d} * {strides[d]}" for d in kept])
    lines += [f"{indent}const int b = {base};", f"{indent}{acc_type} acc = {init};"]
    inner = indent
    for d in axes:
        lines.append(f"{inner}for (int r{d} = 0; r{d} < {x.shape[d]}; r{d}++) {{")
        inner += "    "
    offset = " + ".join(["b"] + [f"r{d} * {strides[d]}" for d in axes])
    lines += [f"{inner}const {acc_type} v = {xp}[{offset}];", f"{inner}acc = {step};"]
    for _ in axes:
        inner = inner[:-4]
        lines.append(f"{inner}}}")
    result = f"acc / {count}.0" if node.op == "mean" else "acc"
    lines.append(f"{indent}{yp}[o++] = ({ctype_of(out.dtype)})({result});")
    for _ in kept:
        indent = indent[:-4]
        lines.append(f"{indent}}}")
    lines.append("}")
    k.line(*lines)
