"""Elementwise kernels, written by the fused-loop generator from the ops' ``"c_scalar"`` rules.

A fused node (``compiler.fused_elementwise``) is its loop as it stands. A single elementwise
node becomes a one-op loop of the same generator; an input that broadcasts in a way the loop
cannot read in place (neither the output's shape, a row, a column nor one element: say
``(4, 1, 3) + (1, 5, 1)``) is first expanded into a scratch array.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .._fused import FusedKernel, FusedOp
from .._ir import Node, Value
from ..passes.fusion import _kind
from .emitter import KernelBuilder, ctype_of
from .layout import row_major_strides, strided_copy


def call_loop(k: KernelBuilder, kernel: FusedKernel, pointers: list[str]) -> None:
    """Call ``kernel``'s loop (a shared helper function) on ``pointers`` (inputs, outputs)."""
    for kind in kernel.input_kinds:
        if kind == "number":
            raise k.fail("a runtime number in a fused loop cannot be exported")
    probe = kernel.c_function("LOOP", index="int", storage="static ")
    key = "loop_" + hashlib.sha256(probe.encode()).hexdigest()[:12]
    name = k.helper(key, lambda n: kernel.c_function(n, index="int", storage="static "))
    rows, cols = kernel.extent()
    k.line(f"{name}(0, {rows}, {cols}, {', '.join(pointers)});")


def fused_rule(node: Node, k: KernelBuilder) -> None:
    """``compiler.fused_elementwise``: its loop on the node's inputs and outputs."""
    kernel: FusedKernel = node.attrs["kernel"]
    call_loop(k, kernel, [k.read(v) for v in node.inputs] + [k.write(v) for v in node.outputs])


def _split_for(shapes: list[tuple[int, ...]], out: tuple[int, ...]) -> int | None:
    """The loop split that reads the most inputs in place (ties: the flat loop, then the
    longest inner loop)."""
    best, best_missing = None, None
    for split in (None, *range(1, len(out))):
        missing = sum(1 for s in shapes if _kind(s, out, split) is None)
        if best_missing is None or missing < best_missing:
            best, best_missing = split, missing
    return best


def elementwise_rule(node: Node, k: KernelBuilder) -> None:
    """Any op with a ``"c_scalar"`` rule, as a loop of one op."""
    out = node.output
    if len(node.outputs) != 1 or out.dtype.kind not in "fb":
        raise k.fail(f"elementwise output {out.type_text()} (the C loops compute float32, "
                     "float64 and bool)")
    values = [a for a in node.inputs if isinstance(a, Value)]
    for v in values:
        if v.dtype.kind not in "fb":
            raise k.fail(f"elementwise input {v.type_text()} (the C loops read float32, "
                         "float64 and bool)")
    split = _split_for([v.shape for v in values], out.shape)
    inputs: list[Value] = []
    kinds: list[str] = []
    pointers: list[str] = []
    args: list[tuple[str, Any]] = []
    for a in node.inputs:
        if not isinstance(a, Value):
            args.append(("lit", a))
            continue
        if a in inputs:
            args.append(("in", inputs.index(a)))
            continue
        kind = _kind(a.shape, out.shape, split)
        pointer = k.read(a)
        if kind is None:  # expand the broadcast into a scratch array the loop reads in full
            pointer_full = k.scratch(out.size, ctype_of(a.dtype))
            padded = (1,) * (out.ndim - a.ndim) + a.shape
            strides = row_major_strides(padded)
            strided_copy(k, pointer_full, pointer, out.shape, 0,
                         [0 if s == 1 else st for s, st in zip(padded, strides)])
            pointer, kind = pointer_full, "full"
        args.append(("in", len(inputs)))
        inputs.append(a)
        kinds.append(kind)
        pointers.append(pointer)
    kernel = FusedKernel([FusedOp(node.op, tuple(args), dict(node.attrs), out.dtype)], kinds,
                         [v.dtype for v in inputs], out.shape, split, [0])
    call_loop(k, kernel, pointers + [k.write(out)])
