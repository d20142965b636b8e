"""Matrix products: ``nn.linear``, ``matmul`` (batched, broadcasting) and the compiler's
``matmul_epilogue`` (a product, then its elementwise loop run in the product's buffer).

The product is written as rank-1 updates, ``C[m, :] += A[m, k] * B[k, :]``: the inner loop runs
along a row of ``B`` and of ``C``, so it vectorizes without reassociating any sum (no fast-math
needed), and each output is added up in order of ``k``, as a textbook loop would. A linear
layer's constant weight (``N x K``) is therefore stored transposed (``K x N``). Rows of ``A`` are
taken four at a time and ``k`` four at a time, so each row of ``B`` loaded serves four rows of
``C`` (batch 32 streams the weight eight times, not 32), and each ``C`` element is loaded and
stored once per four products.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._fused import FusedKernel
from .._ir import Node, Value
from .elementwise import call_loop
from .emitter import KernelBuilder, ctype_of
from .omp import parallel_for

ROWS_PER_BLOCK = 4
DEPTH_PER_STEP = 4


def gemm(ctype: str, m: int, n: int, depth: int, a: str, a_off: str,
         lda: int, b: str, b_off: str, b_kstride: int, b_nstride: int, c: str, c_off: str,
         bias: str | None) -> list[str]:
    """C lines computing ``c[m x n] = a[m x depth] @ b[depth x n] (+ bias[n])``; offsets are C
    expressions, ``lda`` the row stride of ``a``, ``b`` read at ``k * b_kstride + j *
    b_nstride``."""
    zero = "0.0f" if ctype == "float" else "0.0"
    lines: list[str] = []
    blocks = m // ROWS_PER_BLOCK
    body_rows = [(ROWS_PER_BLOCK, f"mb * {ROWS_PER_BLOCK}", blocks)] if blocks else []
    if m % ROWS_PER_BLOCK:
        body_rows.append((1, f"{blocks * ROWS_PER_BLOCK} + mr", m % ROWS_PER_BLOCK))
    work = m * n * depth
    for rows, first_row, count in body_rows:
        var = "mb" if rows > 1 else "mr"
        pragma = parallel_for(work) if rows > 1 else None
        if pragma:
            lines.append(pragma)
        lines.append(f"for (int {var} = 0; {var} < {count}; {var}++) {{")
        inner = [f"const int m0 = {first_row};"]
        for r in range(rows):
            inner.append(f"{ctype} *restrict c{r} = {c} + {c_off} + (m0 + {r}) * {n};")
            inner.append(f"const {ctype} *restrict a{r} = {a} + {a_off} + (m0 + {r}) * {lda};")
        init = f"{bias}[j]" if bias else zero
        inner.append(f"for (int j = 0; j < {n}; j++) {{ "
                     + " ".join(f"c{r}[j] = {init};" for r in range(rows)) + " }")
        inner += _depth_loop(ctype, rows, n, depth, b, b_off, b_kstride, b_nstride)
        lines += ["    " + s for s in inner] + ["}"]
    return lines


def accumulate(rows: int, terms: int, weight: Callable[[int, int], str],
               value: Callable[[int], str]) -> list[str]:
    """``c{r}[j] = ((c{r}[j] + weight(r, 0) * value(0)) + weight(r, 1) * value(1)) ...`` for
    each row ``r``: the products added one after the other, in order (nothing reassociated)."""
    lines = []
    for r in range(rows):
        total = f"c{r}[j]"
        for t in range(terms):
            total = f"({total} + {weight(r, t)} * {value(t)})"
        lines.append(f"c{r}[j] = {total};")
    return lines


def _depth_loop(ctype: str, rows: int, n: int, depth: int, b: str, b_off: str, kstride: int,
                nstride: int) -> list[str]:
    lines: list[str] = []
    main = depth - depth % DEPTH_PER_STEP
    for step, start, stop in ((DEPTH_PER_STEP, 0, main), (1, main, depth)):
        if start >= stop:
            continue
        lines.append(f"for (int kk = {start}; kk < {stop}; kk += {step}) {{")
        body = []
        for t in range(step):
            body.append(f"const {ctype} *restrict b{t} = {b} + {b_off} + (kk + {t}) * {kstride};")
            for r in range(rows):
                body.append(f"const {ctype} a{r}{t} = a{r}[kk + {t}];")
        body.append(f"for (int j = 0; j < {n}; j++) {{")
        index = "j" if nstride == 1 else f"j * {nstride}"
        body += [f"    const {ctype} v{t} = b{t}[{index}];" for t in range(step)]
        body += ["    " + line for line in accumulate(rows, step, lambda r, t: f"a{r}{t}",
                                                       lambda t: f"v{t}")]
        body.append("}")
        lines += ["    " + s for s in body] + ["}"]
    return lines


def _linear_into(k: KernelBuilder, node: Node, x: Value, weight: Value, bias: object,
                 out: Value, yp: str) -> None:
    ctype = ctype_of(out.dtype)
    n, depth = weight.shape
    m = x.size // depth if depth else 0
    w = k.constant(weight)
    if w is not None:  # stored transposed: rows of B are contiguous
        bp, kstride, nstride = k.static(np.ascontiguousarray(w.T),
                                        k.constant_name(weight) + "_t"), n, 1
    else:
        bp, kstride, nstride = k.read(weight), 1, depth
    bias_p = k.read(bias) if isinstance(bias, Value) else None
    k.line(*gemm(ctype, m, n, depth, k.read(x), "0", depth, bp, "0", kstride, nstride, yp,
                 "0", bias_p))


def linear_rule(node: Node, k: KernelBuilder) -> None:
    """``nn.linear(x, weight, bias)``: ``x @ weight.T + bias``."""
    x, weight, bias = (list(node.inputs) + [None])[:3]
    _linear_into(k, node, x, weight, bias, node.output, k.write(node.output))


def _matmul_into(k: KernelBuilder, node: Node, a: Value, b: Value, out: Value, yp: str) -> None:
    ctype = ctype_of(out.dtype)
    a_shape = (1,) + a.shape if a.ndim == 1 else a.shape
    b_shape = b.shape + (1,) if b.ndim == 1 else b.shape
    m, depth = a_shape[-2:]
    n = b_shape[-1]
    batch = np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    total = int(np.prod(batch, dtype=np.int64))
    ap, bp = k.read(a), k.read(b)
    a_step = _batch_strides(a_shape[:-2], batch, m * depth)
    b_step = _batch_strides(b_shape[:-2], batch, depth * n)
    if total == 1:
        k.line(*gemm(ctype, m, n, depth, ap, "0", depth, bp, "0", n, 1, yp, "0", None))
        return
    k.line(f"for (int q = 0; q < {total}; q++) {{")
    a_off = _offset_expr("q", batch, a_step)
    b_off = _offset_expr("q", batch, b_step)
    k.line(*["    " + s for s in gemm(ctype, m, n, depth, ap, a_off, depth, bp, b_off, n, 1,
                                      yp, f"q * {m * n}", None)])
    k.line("}")


def _batch_strides(shape: tuple[int, ...], batch: tuple[int, ...], block: int) -> list[int]:
    """Per batch axis, how far an operand's block moves (0 where it broadcasts)."""
    padded = (1,) * (len(batch) - len(shape)) + tuple(shape)
    strides, step = [], block
    for s in reversed(padded):
        strides.append(step if s > 1 else 0)
        step *= s
    return strides[::-1]


def _offset_expr(q: str, batch: tuple[int, ...], strides: list[int]) -> str:
    """The C offset of batch element ``q`` (row-major over ``batch``) for ``strides``."""
    terms, divisor = [], 1
    for size, stride in zip(reversed(batch), reversed(strides)):
        if stride:
            terms.append(f"(({q} / {divisor}) % {size}) * {stride}")
        divisor *= size
    return " + ".join(terms) or "0"


def matmul_rule(node: Node, k: KernelBuilder) -> None:
    """``matmul`` with NumPy's batching and 1-d rules."""
    a, b = node.inputs[:2]
    _matmul_into(k, node, a, b, node.output, k.write(node.output))


def epilogue_rule(node: Node, k: KernelBuilder) -> None:
    """``compiler.matmul_epilogue``: the product into the loop's output (or a scratch array),
    then the loop over it, in place."""
    attrs = node.attrs
    n_args, at = attrs["n_product_args"], attrs["at"]
    kernel: FusedKernel = attrs["kernel"]
    product_inputs, rest = node.inputs[:n_args], node.inputs[n_args:]
    target = next((j for j, i in kernel.out_into.items() if i == at), None)
    shape = kernel.shape
    probe = Value(shape, kernel.input_dtypes[at])
    out_pointers = [k.write(v) for v in node.outputs]
    yp = out_pointers[target] if target is not None else k.scratch(
        probe.size, ctype_of(probe.dtype))
    if attrs["product"] == "nn.linear":
        x, weight, bias = (list(product_inputs) + [None])[:3]
        _linear_into(k, node, x, weight, bias, probe, yp)
    else:
        _matmul_into(k, node, product_inputs[0], product_inputs[1], probe, yp)
    loop_inputs = [k.read(v) for v in rest[:at]] + [yp] + [k.read(v) for v in rest[at:]]
    call_loop(k, kernel, loop_inputs + out_pointers)
