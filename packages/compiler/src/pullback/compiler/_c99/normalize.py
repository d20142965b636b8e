"""Row-wise kernels: ``nn.softmax``, ``nn.log_softmax``, ``nn.layer_norm`` and
``nn.scaled_dot_product_attention`` (scale, additive mask, causal mask; no dropout at
inference).

Statistics (the mean and variance of a layer norm, the sums of a softmax) are accumulated in
double: a row is summed in order, where NumPy sums pairwise, and double keeps that difference
far below float32's rounding. ``exp`` is the expression of the op's ``"c_scalar"`` rule (for
float32, pullback's vectorizable ``pb_exp32``, the one the fused loops use).
"""

from __future__ import annotations

import numpy as np

from .._c_rules import C_SCALAR_RULES, c_literal
from .._ir import Node, Value
from .emitter import KernelBuilder, ctype_of
from .layout import row_major_strides
from .linalg import _batch_strides, _offset_expr


def _exp(x: str, ctype: str) -> str:
    return C_SCALAR_RULES["exp"]([x], ctype)


def _log(x: str, ctype: str) -> str:
    return C_SCALAR_RULES["log"]([x], ctype)


def _maximum(a: str, b: str, ctype: str) -> str:
    return C_SCALAR_RULES["maximum"]([a, b], ctype)


def _rows(x: Value, axis: int) -> tuple[int, int, int]:
    """``(outer, length, inner)`` of ``x`` seen as rows along ``axis``."""
    axis %= max(x.ndim, 1)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
    return outer, (x.shape[axis] if x.ndim else 1), inner


def softmax_rule(node: Node, k: KernelBuilder) -> None:
    """``nn.softmax`` and ``nn.log_softmax`` along ``axis``."""
    x, out = node.inputs[0], node.output
    if x.dtype.kind != "f" or x.size == 0:
        raise k.fail(f"input {x.type_text()}")
    ctype = ctype_of(out.dtype)
    outer, length, inner = _rows(x, node.attrs["axis"])
    xp, yp = k.read(x), k.write(out)
    at = f"b + a * {inner}"
    lines = [f"for (int o = 0; o < {outer}; o++) {{",
             f"    for (int i = 0; i < {inner}; i++) {{",
             f"        const int b = o * {length * inner} + i;",
             f"        {ctype} mx = -INFINITY;",
             f"        for (int a = 0; a < {length}; a++) mx = "
             f"{_maximum('mx', f'{xp}[{at}]', ctype)};",
             "        double sum = 0.0;"]
    if node.op == "nn.softmax":
        lines += [f"        for (int a = 0; a < {length}; a++) {{",
                  f"            const {ctype} e = {_exp(f'{xp}[{at}] - mx', ctype)};",
                  f"            {yp}[{at}] = e;", "            sum += e;", "        }",
                  f"        const {ctype} total = ({ctype})sum;",
                  f"        for (int a = 0; a < {length}; a++) {yp}[{at}] /= total;"]
    else:
        lines += [f"        for (int a = 0; a < {length}; a++) sum += "
                  f"{_exp(f'{xp}[{at}] - mx', ctype)};",
                  f"        const {ctype} shift = {_log(f'({ctype})sum', ctype)};",
                  f"        for (int a = 0; a < {length}; a++) {yp}[{at}] = "
                  f"({xp}[{at}] - mx) - shift;"]
    k.line(*lines, "    }", "}")


def layer_norm_rule(node: Node, k: KernelBuilder) -> None:
    """``nn.layer_norm(x, weight, bias)`` over the trailing ``normalized_ndim`` axes."""
    x, weight, bias = node.inputs[:3]
    out = node.output
    if x.dtype.kind != "f":
        raise k.fail(f"input {x.type_text()}")
    ctype = ctype_of(out.dtype)
    n = int(np.prod(x.shape[x.ndim - node.attrs["normalized_ndim"]:], dtype=np.int64))
    rows = x.size // n if n else 0
    eps = float(node.attrs["eps"])
    xp, yp = k.read(x), k.write(out)
    scaled = "v"
    if isinstance(weight, Value):
        scaled = f"v * {k.read(weight)}[i]"
    if isinstance(bias, Value):
        scaled = f"{scaled} + {k.read(bias)}[i]"
    k.line(f"for (int r = 0; r < {rows}; r++) {{",
           f"    const {ctype} *restrict row = {xp} + r * {n};",
           f"    {ctype} *restrict dst = {yp} + r * {n};",
           "    double sum = 0.0, squares = 0.0;",
           f"    for (int i = 0; i < {n}; i++) sum += row[i];",
           f"    const double mean = sum / {n};",
           f"    for (int i = 0; i < {n}; i++) {{ const double d = row[i] - mean; "
           "squares += d * d; }",
           f"    const {ctype} m = ({ctype})mean;",
           f"    const {ctype} rstd = ({ctype})(1.0 / sqrt(squares / {n} + {eps!r}));",
           f"    for (int i = 0; i < {n}; i++) {{ const {ctype} v = (row[i] - m) * rstd; "
           f"dst[i] = {scaled}; }}",
           "}")


def attention_rule(node: Node, k: KernelBuilder) -> None:
    """``softmax(q k^T * scale + bias, causal) @ v`` over the last two axes."""
    q, key, value, bias, keep = (list(node.inputs) + [None, None])[:5]
    if isinstance(keep, Value):
        raise k.fail("a dropout mask cannot be exported (export in eval mode)")
    out = node.output
    ctype = ctype_of(out.dtype)
    length, depth = q.shape[-2:]
    keys, width = key.shape[-2], value.shape[-1]
    batch = tuple(out.shape[:-2])
    total = int(np.prod(batch, dtype=np.int64))
    q_off = _offset_expr("g", batch, _batch_strides(q.shape[:-2], batch, length * depth))
    k_off = _offset_expr("g", batch, _batch_strides(key.shape[:-2], batch, keys * depth))
    v_off = _offset_expr("g", batch, _batch_strides(value.shape[:-2], batch, keys * width))
    scale = c_literal(node.attrs["scale"], ctype)
    causal = bool(node.attrs.get("causal", False))
    qp, kp, vp, yp = k.read(q), k.read(key), k.read(value), k.write(out)
    scores = k.scratch(keys, ctype)
    add_bias = ""
    if isinstance(bias, Value):
        full = batch + (length, keys)
        padded = (1,) * (len(full) - bias.ndim) + bias.shape
        strides = [0 if s == 1 else st for s, st in zip(padded, row_major_strides(padded))]
        b_off = _offset_expr("g", batch, strides[:-2])
        add_bias = f" + {k.read(bias)}[{b_off} + i * {strides[-2]} + j * {strides[-1]}]"
    seen = f"(i + 1 < {keys} ? i + 1 : {keys})" if causal else str(keys)
    zero = c_literal(0.0, ctype)
    k.line(f"for (int g = 0; g < {total}; g++) {{",
           f"    const {ctype} *restrict qs = {qp} + {q_off};",
           f"    const {ctype} *restrict ks = {kp} + {k_off};",
           f"    const {ctype} *restrict vs = {vp} + {v_off};",
           f"    for (int i = 0; i < {length}; i++) {{",
           f"        const int seen = {seen};",
           f"        {ctype} *restrict dst = {yp} + (g * {length} + i) * {width};",
           f"        {ctype} mx = -INFINITY;",
           "        for (int j = 0; j < seen; j++) {",
           f"            {ctype} s = {zero};",
           f"            for (int e = 0; e < {depth}; e++) s += qs[i * {depth} + e] * "
           f"ks[j * {depth} + e];",
           f"            s = s * {scale}{add_bias};",
           f"            {scores}[j] = s;",
           f"            mx = {_maximum('mx', 's', ctype)};",
           "        }",
           "        double sum = 0.0;",
           "        for (int j = 0; j < seen; j++) {",
           f"            {scores}[j] = {_exp(f'{scores}[j] - mx', ctype)};",
           f"            sum += {scores}[j];",
           "        }",
           f"        for (int e = 0; e < {width}; e++) dst[e] = {zero};",
           "        for (int j = 0; j < seen; j++) {",
           f"            const {ctype} p = {scores}[j] / ({ctype})sum;",
           f"            for (int e = 0; e < {width}; e++) dst[e] += p * vs[j * {width} + e];",
           "        }", "    }", "}")
