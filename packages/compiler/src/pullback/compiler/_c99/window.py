"""Sliding-window kernels: ``nn.conv2d`` (groups, stride, padding, dilation) and 2-d max and
average pooling (the 1-d layers are 2-d ones of height 1 in pullback's graphs).

The direct convolution (any stride; stride 1 has the faster form of :mod:`.conv`) needs no
im2col buffer, which would cost a microcontroller its RAM: for each output channel, input
channel and kernel tap, the tap's weight times the shifted input plane is added to the output
plane. The output rows and columns a tap reaches inside the input
are computed at export time (tables of ``[lo, hi)`` per tap), so the inner loop has no bounds
test and runs along a contiguous row when the stride is 1.

Average pooling's divisor comes from the op's own kernel, run at export time on ones in float64
(``valid / average`` is the divisor PyTorch's rules give, padding and ``ceil_mode`` included).
"""

from __future__ import annotations

import numpy as np

from pullback.registry import get_op

from .._c_rules import C_SCALAR_RULES
from .._ir import Node, Value
from .emitter import KernelBuilder, ctype_of


def _reach(out_size: int, in_size: int, stride: int, before: int, dilation: int,
           taps: int) -> np.ndarray:
    """For each tap, the ``[lo, hi)`` outputs whose input position is inside the input."""
    table = np.zeros((taps, 2), np.int32)
    for t in range(taps):
        inside = [o for o in range(out_size)
                  if 0 <= o * stride - before + t * dilation < in_size]
        table[t] = (inside[0], inside[-1] + 1) if inside else (0, 0)
    return table


def direct_conv2d_rule(node: Node, k: KernelBuilder) -> None:
    """Any ``nn.conv2d`` (strides above 1 come here; stride 1 is :mod:`.conv`'s)."""
    x, weight = node.inputs[:2]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    out = node.output
    if x.ndim != 4 or out.dtype.kind != "f":
        raise k.fail(f"input {x.type_text()} (4-d float expected)")
    (sh, sw), ((pt, _), (pl, _)) = node.attrs["stride"], node.attrs["padding"]
    dh, dw = node.attrs["dilation"]
    groups = node.attrs.get("groups", 1)
    n, c, h, w = x.shape
    o, cpg, kh, kw = weight.shape
    _, _, oh, ow = out.shape
    opg = o // groups
    ctype = ctype_of(out.dtype)
    rows = k.static(_reach(oh, h, sh, pt, dh, kh).reshape(-1), "conv_rows")
    cols = k.static(_reach(ow, w, sw, pl, dw, kw).reshape(-1), "conv_cols")
    xp, wp, yp = k.read(x), k.read(weight), k.write(out)
    init = f"{k.read(bias)}[o]" if isinstance(bias, Value) else ("0.0f" if ctype == "float"
                                                                  else "0.0")
    k.line(f"for (int b = 0; b < {n}; b++) {{",
           f"    for (int o = 0; o < {o}; o++) {{",
           f"        {ctype} *restrict plane = {yp} + (b * {o} + o) * {oh * ow};",
           f"        for (int i = 0; i < {oh * ow}; i++) plane[i] = {init};",
           f"        for (int ci = 0; ci < {cpg}; ci++) {{",
           f"            const {ctype} *restrict src = {xp} + (b * {c} + (o / {opg}) * {cpg} "
           f"+ ci) * {h * w};",
           f"            for (int th = 0; th < {kh}; th++) {{",
           f"                for (int tw = 0; tw < {kw}; tw++) {{",
           f"                    const {ctype} wv = {wp}[((o * {cpg} + ci) * {kh} + th) * {kw}"
           " + tw];",
           f"                    const int lo = {cols}[2 * tw], hi = {cols}[2 * tw + 1];",
           f"                    const int shift = tw * {dw} - {pl};",
           f"                    for (int r = {rows}[2 * th]; r < {rows}[2 * th + 1]; r++) {{",
           f"                        const {ctype} *restrict line = src + (r * {sh} - {pt} + "
           f"th * {dh}) * {w};",
           f"                        {ctype} *restrict dst = plane + r * {ow};",
           f"                        for (int q = lo; q < hi; q++) dst[q] += wv * "
           f"line[q * {sw} + shift];",
           "                    }", "                }", "            }", "        }", "    }", "}")


def _pool_loops(k: KernelBuilder, node: Node, body: list[str], init: str, finish: str) -> None:
    x, out = node.inputs[0], node.output
    if x.ndim != 4 or x.dtype.kind != "f":
        raise k.fail(f"input {x.type_text()} (4-d float expected)")
    (khs, kws), (sh, sw) = node.attrs["kernel_size"], node.attrs["stride"]
    (pt, _), (pl, _) = node.attrs["padding"]
    dh, dw = node.attrs.get("dilation", (1, 1))
    _, _, h, w = x.shape
    planes, (oh, ow) = x.shape[0] * x.shape[1], out.shape[2:]
    ctype = ctype_of(out.dtype)
    xp, yp = k.read(x), k.write(out)
    # whether some window reaches outside the input (padding, ceil mode): only then test bounds
    rows_leave = pt > 0 or (oh - 1) * sh - pt + (khs - 1) * dh >= h
    cols_leave = pl > 0 or (ow - 1) * sw - pl + (kws - 1) * dw >= w
    k.line(f"for (int p = 0; p < {planes}; p++) {{",
           f"    const {ctype} *restrict src = {xp} + p * {h * w};",
           f"    for (int r = 0; r < {oh}; r++) {{",
           f"        for (int q = 0; q < {ow}; q++) {{",
           f"            {ctype} acc = {init};",
           f"            for (int th = 0; th < {khs}; th++) {{",
           f"                const int i = r * {sh} - {pt} + th * {dh};",
           *([f"                if (i < 0 || i >= {h}) continue;"] if rows_leave else []),
           f"                for (int tw = 0; tw < {kws}; tw++) {{",
           f"                    const int j = q * {sw} - {pl} + tw * {dw};",
           *([f"                    if (j < 0 || j >= {w}) continue;"] if cols_leave else []),
           f"                    const {ctype} v = src[i * {w} + j];",
           *["                    " + line for line in body],
           "                }", "            }",
           f"            {yp}[(p * {oh} + r) * {ow} + q] = {finish};",
           "        }", "    }", "}")


def max_pool2d_rule(node: Node, k: KernelBuilder) -> None:
    """The window's maximum; NaN propagates as NumPy's ``maximum`` (padding is -inf)."""
    ctype = ctype_of(node.output.dtype)
    step = C_SCALAR_RULES["maximum"](["acc", "v"], ctype)
    _pool_loops(k, node, [f"acc = {step};"], "-INFINITY", "acc")


def pool_windows(node: Node) -> tuple[np.ndarray, np.ndarray]:
    """An ``nn.avg_pool2d`` node's ``(valid, divisor)`` per output position: how many of the
    window's taps fall inside the input, and what its sum is divided by (padding, ceil mode,
    ``count_include_pad`` and ``divisor_override`` as the op's kernel applies them)."""
    x, out = node.inputs[0], node.output
    ones = np.ones((1, 1) + x.shape[2:], np.float64)
    average = np.asarray(get_op(node.op).kernel_for("cpu")(ones, **node.attrs))[0, 0]
    (khs, kws), (sh, sw) = node.attrs["kernel_size"], node.attrs["stride"]
    (pt, _), (pl, _) = node.attrs["padding"]
    valid = np.outer(_count(out.shape[2], x.shape[2], sh, pt, khs),
                     _count(out.shape[3], x.shape[3], sw, pl, kws))
    divisor = np.where(average > 0, np.rint(valid / np.where(average > 0, average, 1.0)), 1.0)
    return valid, divisor


def avg_pool2d_rule(node: Node, k: KernelBuilder) -> None:
    """The window's sum (taps in order, as the kernel adds them) over its divisor."""
    out = node.output
    _, divisor = pool_windows(node)
    table = k.static(divisor.astype(out.dtype).reshape(-1), "pool_divisors")
    ow = out.shape[3]
    _pool_loops(k, node, ["acc += v;"], "0", f"acc / {table}[r * {ow} + q]")


def _count(out_size: int, in_size: int, stride: int, before: int, taps: int) -> np.ndarray:
    """How many of each output's taps fall inside the input (one axis)."""
    return np.array([sum(1 for t in range(taps) if 0 <= o * stride - before + t < in_size)
                     for o in range(out_size)], np.float64)
