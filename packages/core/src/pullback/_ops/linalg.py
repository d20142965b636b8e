"""Linear algebra: matmul (batched, broadcasting, 1-D cases) and einsum; dot and outer compose."""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from ..dispatch import apply
from ..errors import ShapeError
from ..promotion import SAME
from ..registry import Op
from ._declare import declare


def _matmul_kernel(xp: Any) -> Any:
    def matmul(x: Any, y: Any) -> Any:
        if x.ndim > 2 and y.ndim == 2:
            # A stack of matrices times one matrix is one GEMM over the folded rows; NumPy would
            # loop over the stack (measured 20-40x slower for (32, 64, 128) @ (128, 384)).
            # (reshape(-1, k) cannot infer the row count of an empty stack)
            rows = xp.matmul(x.reshape(math.prod(x.shape[:-1]), x.shape[-1]), y)
            out = rows.reshape(x.shape[:-1] + (y.shape[-1],))
        elif x.ndim == 2 and y.ndim == 2 and x.shape[1] == 1:
            # An outer product (a one-output Linear layer's input gradient): NumPy's matmul
            # takes its slow non-BLAS loop there (65,536 x 1 @ 1 x 16: 2.7 ms, dot 0.6 ms); each
            # entry is one product either way, so the values are the same.
            out = xp.dot(x, y)
        else:
            out = xp.matmul(x, y)
        # ml_dtypes' bfloat16 matmul accumulates and returns float32: round back (PyTorch too
        # accumulates bfloat16 products in float32).
        return out if out.dtype == x.dtype else out.astype(xp.result_type(x, y), copy=False)

    return matmul


# PyTorch refuses to mix dtypes in a matrix product (SAME): no silent float64 GEMM.
MATMUL = declare(Op("matmul", _matmul_kernel, promotion=SAME,
                    doc="matrix product (NumPy semantics)"))


@MATMUL.def_grad
def _matmul_grad(F: Any, g: Any, out: Any, x: Any, y: Any, needs: Any) -> Any:
    # Promote 1-D operands to matrices as matmul does, then undo it on the gradients.
    x2 = F.reshape(x, shape=(1,) + tuple(x.shape)) if x.ndim == 1 else x
    y2 = F.reshape(y, shape=tuple(y.shape) + (1,)) if y.ndim == 1 else y
    g_shape = list(g.shape)
    if y.ndim == 1:
        g_shape.append(1)
    if x.ndim == 1:
        g_shape.insert(len(g_shape) - 1, 1)
    g2 = F.reshape(g, shape=tuple(g_shape)) if len(g_shape) != g.ndim else g
    gx = gy = None
    if needs[0]:
        gx = _fit(F, F.matmul(g2, F.swapaxes(y2, a=-1, b=-2)), x2, x)
    if needs[1]:
        if y2.ndim == 2 and x2.ndim > 2:
            # One matrix shared by a stack: fold the stack into rows, one GEMM, no reduction.
            # (the row count spelled out: -1 is ambiguous when a dim is 0, as in (2, 3, 0))
            n = math.prod(x2.shape[:-1])
            rows = F.reshape(x2, shape=(n, x2.shape[-1]))
            grads = F.reshape(g2, shape=(n, g2.shape[-1]))
            gy = _fit(F, F.matmul(F.swapaxes(rows, a=-1, b=-2), grads), y2, y)
        else:
            gy = _fit(F, F.matmul(F.swapaxes(x2, a=-1, b=-2), g2), y2, y)
    return gx, gy


def _fit(F: Any, grad: Any, promoted: Any, original: Any) -> Any:
    """Sum away broadcast batch dims, then drop the dim a 1-D operand was promoted with."""
    if grad.shape != promoted.shape:
        grad = F.sum_to(grad, shape=tuple(promoted.shape))
    if original.ndim == 1:
        grad = F.reshape(grad, shape=tuple(original.shape))
    return grad


def _swapaxes_kernel(xp: Any) -> Any:
    if xp is np:  # the array's method: np.swapaxes adds two Python calls (see shape.py's reshape)
        return lambda x, a, b: x.swapaxes(a, b)
    return lambda x, a, b: xp.swapaxes(x, a, b)


SWAPAXES = declare(Op("swapaxes", _swapaxes_kernel, view=True, save_inputs=False,
                      doc="swap two axes"))
SWAPAXES.def_grad(lambda F, g, out, x, a, b: (F.swapaxes(g, a=a, b=b),))


def matmul(x: Any, y: Any) -> Any:
    """Matrix product with NumPy's rules: batching, broadcasting, 1-D vectors."""
    return product(x, y, "matmul")


def product(x: Any, y: Any, name: str) -> Any:
    """``x @ y`` for the public function ``name`` (matmul, mm, bmm, mv), whose name a shape
    error gives."""
    check_product_shapes(tuple(x.shape), tuple(y.shape), name)
    return apply(MATMUL, x, y)


def check_product_shapes(a: tuple[int, ...], b: tuple[int, ...], name: str) -> None:
    """One :class:`ShapeError` naming the op and both shapes for operands that cannot be
    multiplied (NumPy's own error names a gufunc signature instead)."""
    if not a or not b:
        raise ShapeError(f"{name}: both operands need at least 1 dim, got {a} and {b}")
    inner_a, inner_b = a[-1], b[0] if len(b) == 1 else b[-2]
    if inner_a != inner_b:
        second = "the vector's length" if len(b) == 1 else "the second's second-to-last dim"
        raise ShapeError(f"{name}: shapes {a} and {b} cannot be multiplied: the first's last dim "
                         f"({inner_a}) must equal {second} ({inner_b})")
    for da, db in zip(reversed(a[:-2]), reversed(b[:-2])):
        if da != db and da != 1 and db != 1:
            raise ShapeError(f"{name}: shapes {a} and {b} cannot be multiplied: their batch dims "
                             f"{a[:-2]} and {b[:-2]} do not broadcast")


def dot(x: Any, y: Any) -> Any:
    """Inner product of two 1-D tensors."""
    if x.ndim != 1 or y.ndim != 1:
        raise ShapeError(f"dot: expected two 1-D tensors, got {tuple(x.shape)} and {tuple(y.shape)}")
    return product(x, y, "dot")


def outer(x: Any, y: Any) -> Any:
    """Outer product of two 1-D tensors."""
    from .shape import reshape

    if x.ndim != 1 or y.ndim != 1:
        raise ShapeError(f"outer: expected two 1-D tensors, got {tuple(x.shape)} and {tuple(y.shape)}")
    return reshape(x, (-1, 1)) * reshape(y, (1, -1))


# -- einsum -----------------------------------------------------------------------------------

def _einsum_kernel(xp: Any) -> Any:
    def einsum(*operands: Any, equation: str) -> Any:
        dtype = xp.result_type(*operands)
        if dtype.itemsize == 2 and dtype.kind == "V":
            # NumPy's einsum has no bfloat16 loops: compute in float32, round once (as PyTorch
            # accumulates bfloat16 in float32).
            operands = tuple(op.astype(xp.float32) for op in operands)
            return xp.einsum(equation, *operands, optimize=len(operands) > 1).astype(dtype)
        return xp.einsum(equation, *operands, optimize=len(operands) > 1)

    return einsum


EINSUM = declare(Op("einsum", _einsum_kernel, promotion=SAME, doc="Einstein summation"))


@EINSUM.def_grad
def _einsum_grad(F: Any, g: Any, out: Any, *operands: Any, equation: str, needs: Any) -> Any:
    lhs, output = equation.split("->")
    subs = lhs.split(",")
    grads: list[Any] = []
    for i, sub in enumerate(subs):
        if not needs[i]:
            grads.append(None)
            continue
        others = [(s, op) for j, (s, op) in enumerate(zip(subs, operands)) if j != i]
        grads.append(_einsum_operand_grad(F, g, output, others, sub, operands[i].shape))
    return tuple(grads)


def _einsum_operand_grad(F: Any, g: Any, output: str, others: list, sub: str,
                         shape: tuple[int, ...]) -> Any:
    """Gradient for one operand: contract ``g`` with the others onto the operand's letters.

    Letters only this operand has are broadcast back (times a ones tensor); a letter repeated
    in it (a diagonal) is put back on the diagonal with an identity matrix.
    """
    available = set(output) | {c for s, _ in others for c in s}
    sizes = dict(zip(sub, shape))
    spare = [c for c in string.ascii_letters if c not in available and c not in sub]
    target, ties, seen = [], [], set()
    for c in sub:  # rename repeated letters: "iij" -> "iAj", with an identity tying i and A
        if c in seen:
            new = spare.pop()
            ties.append((c, new))
            target.append(new)
        else:
            seen.add(c)
            target.append(c)
    kept = "".join(c for c in dict.fromkeys(sub) if c in available)
    inputs = ",".join([output] + [s for s, _ in others])
    grad = F.einsum(g, *[op for _, op in others], equation=f"{inputs}->{kept}")
    for c, new in ties:
        # Put the diagonal back; a repeated letter summed inside this operand alone (a trace)
        # is not in ``kept`` yet and enters with the identity.
        tied = new if c in kept else c + new
        eye = F.eye(sizes[c], like=g)
        grad = F.einsum(grad, eye, equation=f"{kept},{c}{new}->{kept}{tied}")
        kept += tied
    missing = "".join(c for c in target if c not in kept)
    if missing:  # letters summed away inside this operand only: constant along them
        ones = F.full(tuple(sizes[c] for c in missing), 1.0, like=g)
        grad = F.einsum(grad, ones, equation=f"{kept},{missing}->{kept}{missing}")
        kept += missing
    return F.einsum(grad, equation=f"{kept}->{''.join(target)}")


_LETTERS = string.ascii_letters


def _normalize_equation(equation: str, ndims: list[int]) -> str:
    """Explicit form without ellipsis: ``"...ij,...jk"`` -> ``"abij,abjk->abik"``."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        lhs, rhs = equation.split("->")
    else:
        lhs, rhs = equation, None
    subs = lhs.split(",")
    if len(subs) != len(ndims):
        raise ShapeError(f"einsum: equation '{equation}' has {len(subs)} operands, got {len(ndims)}")
    used = set(c for c in equation if c.isalpha())
    spare = [c for c in _LETTERS if c not in used]
    ell_dims = max((nd - len(s.replace("...", "")) for s, nd in zip(subs, ndims) if "..." in s),
                   default=0)
    ell = "".join(spare[:ell_dims])
    out_subs = []
    for s, nd in zip(subs, ndims):
        if "..." in s:
            k = nd - len(s.replace("...", ""))
            s = s.replace("...", ell[ell_dims - k:] if k else "")
        if len(s) != nd:
            raise ShapeError(f"einsum: subscript '{s}' has {len(s)} letters for an operand with {nd} dims")
        out_subs.append(s)
    if rhs is None:
        counts: dict[str, int] = {}
        for s in out_subs:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        rhs = rhs.replace("...", ell)
    return ",".join(out_subs) + "->" + rhs


def einsum(equation: str, *operands: Any) -> Any:
    """Einstein summation (NumPy/PyTorch notation, ellipsis included), with gradients."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = _normalize_equation(equation, [op.ndim for op in operands])
    return apply(EINSUM, *operands, equation=eq)
