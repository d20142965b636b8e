"""``nn.conv2d`` of stride 1 as a matrix product over *wide rows*, without an im2col buffer.

With stride 1, output ``(r, q)`` of tap ``(th, tw)`` reads the (padded) input at
``(r + th*dh) * Wp + q + tw*dw``: for a fixed tap that is one contiguous run of the input plane
when the output is laid out with the input's row length ``Wp`` (a "wide" output whose last
``Wp - ow`` columns of each row are junk). So each output channel is a row of a product
``out[o, :] += W[o, ci, th, tw] * Xp[ci, th*dh*Wp + tw*dw + (0 .. N)]`` over taps, with
``N = (oh - 1) * Wp + ow``: long inner loops of a size known at export time, which GCC
vectorizes at ``-O2``, and four output channels per pass over the input (each input value
loaded serves four). The cost is a zero-padded copy of the input when there is padding and a
wide scratch output when ``Wp > ow`` (then copied into place): a few KiB for LeNet, far less
than im2col's ``cin * kh * kw`` copies of the input.

Each output adds its bias, then the taps in the order ``(ci, th, tw)``, as the direct loop of
:mod:`.window` does (used for strides above 1).
"""

from __future__ import annotations

from .._ir import Node, Value
from .emitter import KernelBuilder, ctype_of
from .linalg import accumulate
from .window import direct_conv2d_rule

CHANNELS_PER_PASS = 4
ROW_TAPS = 7  # kernels up to this wide add a whole row of taps per pass over the outputs


def conv2d_rule(node: Node, k: KernelBuilder) -> None:
    x, out = node.inputs[0], node.output
    if x.ndim != 4 or out.dtype.kind != "f" or tuple(node.attrs["stride"]) != (1, 1):
        direct_conv2d_rule(node, k)
        return
    weight = node.inputs[1]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    ((pt, pb), (pl, pr)) = node.attrs["padding"]
    dh, dw = node.attrs["dilation"]
    groups = node.attrs.get("groups", 1)
    n, c, h, w = x.shape
    o, cpg, kh, kw = weight.shape
    oh, ow = out.shape[2:]
    hp, wp = h + pt + pb, w + pl + pr
    span = (oh - 1) * wp + ow
    opg = o // groups
    ctype = ctype_of(out.dtype)
    xp, wt, yp = k.read(x), k.read(weight), k.write(out)
    padded = (pt, pb, pl, pr) != (0, 0, 0, 0)
    src = k.scratch(c * hp * wp, ctype) if padded else None
    wide = k.scratch(o * oh * wp, ctype) if wp != ow else None
    zero = "0.0f" if ctype == "float" else "0.0"
    k.line(f"for (int b = 0; b < {n}; b++) {{")
    body: list[str] = []
    if padded:
        body += [f"for (int i = 0; i < {c * hp * wp}; i++) {src}[i] = {zero};",
                 f"for (int p = 0; p < {c * h}; p++) {{",
                 f"    const {ctype} *restrict line = {xp} + b * {c * h * w} + p * {w};",
                 f"    {ctype} *restrict to = {src} + (p / {h}) * {hp * wp} + "
                 f"(p % {h} + {pt}) * {wp} + {pl};",
                 f"    for (int q = 0; q < {w}; q++) to[q] = line[q];", "}",
                 f"const {ctype} *restrict input = {src};"]
    else:
        body.append(f"const {ctype} *restrict input = {xp} + b * {c * h * w};")
    body.append(f"{ctype} *restrict result = "
                + (f"{wide};" if wide else f"{yp} + b * {o * oh * ow};"))
    for rows, first, count in _passes(opg):
        body += _pass(ctype, rows, first, count, groups, opg, cpg, kh, kw, dh, dw, hp, wp, oh,
                      span, wt, k.read(bias) if isinstance(bias, Value) else None, zero)
    if wide:
        body += [f"for (int p = 0; p < {o * oh}; p++) {{",
                 f"    {ctype} *restrict to = {yp} + b * {o * oh * ow} + p * {ow};",
                 f"    const {ctype} *restrict from = {wide} + p * {wp};",
                 f"    for (int q = 0; q < {ow}; q++) to[q] = from[q];", "}"]
    k.line(*["    " + line for line in body], "}")


def _passes(opg: int) -> list[tuple[int, str, int]]:
    """``(channels per pass, first channel expression, passes)`` within a group."""
    blocks = opg // CHANNELS_PER_PASS
    passes = [(CHANNELS_PER_PASS, f"ob * {CHANNELS_PER_PASS}", blocks)] if blocks else []
    if opg % CHANNELS_PER_PASS:
        passes.append((1, f"{blocks * CHANNELS_PER_PASS} + ob", opg % CHANNELS_PER_PASS))
    return passes


def _pass(ctype: str, rows: int, first: str, count: int, groups: int, opg: int, cpg: int,
          kh: int, kw: int, dh: int, dw: int, hp: int, wp: int, oh: int, span: int, wt: str,
          bias: str | None, zero: str) -> list[str]:
    """The loop over passes of ``rows`` output channels: bias, then every tap."""
    lines = [f"for (int g = 0; g < {groups}; g++) {{",
             f"    for (int ob = 0; ob < {count}; ob++) {{",
             f"        const int o0 = g * {opg} + {first};"]
    for r in range(rows):
        init = f"{bias}[o0 + {r}]" if bias else zero
        lines += [f"        {ctype} *restrict c{r} = result + (o0 + {r}) * {oh * wp};",
                  f"        for (int j = 0; j < {span}; j++) c{r}[j] = {init};"]
    # a row of taps at a time (all of kw up to ROW_TAPS): each output is loaded and stored once
    # per row of the kernel, not once per tap, and still adds the taps in order
    taps = kw if kw <= ROW_TAPS else 1
    lines += [f"        for (int ci = 0; ci < {cpg}; ci++) {{",
              f"            for (int th = 0; th < {kh}; th++) {{",
              f"                for (int tw = 0; tw < {kw}; tw += {taps}) {{",
              f"                    const {ctype} *restrict v = input + (g * {cpg} + ci) * "
              f"{hp * wp} + th * {dh * wp} + tw * {dw};",
              f"                    const int tap = (ci * {kh} + th) * {kw} + tw;"]
    for r in range(rows):
        for t in range(taps):
            lines.append(f"                    const {ctype} w{r}_{t} = {wt}[(o0 + {r}) * "
                         f"{cpg * kh * kw} + tap + {t}];")
    lines += [f"                    for (int j = 0; j < {span}; j++) {{"]
    lines += [f"                        const {ctype} s{t} = v[j + {t * dw}];" for t in range(taps)]
    lines += ["                        " + line for line in accumulate(
        rows, taps, lambda r, t: f"w{r}_{t}", lambda t: f"s{t}")]
    lines += ["                    }", "                }", "            }", "        }", "    }",
              "}"]
    return lines
