"""Batching rules of matmul and einsum.

einsum gives the batch a letter of its own. matmul promotes 1-D operands to matrices and pads
sample ranks so that NumPy's broadcasting of the stack dims lines the batch up; an unbatched
matrix times a batch of matrices is folded into one GEMM (the batch joins the columns), which is
what a per-sample gradient's backward through a linear layer needs; a batch of rank-1 products
(its weight gradient) becomes one ``func.outer``.
"""

from __future__ import annotations

import string
from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op, get_op

from .._errors import VmapError
from .._outer import OUTER
from ._util import front, logical_ndim, materialize, move_dim, pad_after_batch, reshape

MUL = get_op("mul")


def _matmul(op: Op, args: Any, bdims: Any, size: int, /) -> Any:
    x, y = args
    bx, by = bdims
    nx, ny = logical_ndim(x, bx), logical_ndim(y, by)
    if bx is None and nx == 2 and ny == 2:
        # (m, k) @ (B, k, n): one GEMM (m, k) @ (k, B*n), the batch inside the columns.
        yv = move_dim(y, by, 1)
        k, _, n = yv.shape
        out = apply(op, x, reshape(yv, (k, size * n)))
        return reshape(out, (x.shape[0], size, n)), 1
    if by is None and ny == 2:
        return apply(op, front(x, bx), y), 0  # the kernel folds the stack into rows
    xs = _as_matrices(x, bx, nx, before=True)
    ys = _as_matrices(y, by, ny, before=False)
    rank = max(nx, 2, ny)
    xs = xs if bx is None else pad_after_batch(xs, rank)
    ys = ys if by is None else pad_after_batch(ys, rank)
    if bx is not None and by is not None and xs.shape[-1] == 1:
        # Stacks of outer products (a per-sample weight gradient g x^T), NumPy's matmul over a
        # stack of rank-1 products being several times slower: one func.outer where the stacks
        # line up, else a broadcast multiply.
        if xs.shape[:-2] == ys.shape[:-2] and xs.dtype == ys.dtype:
            out = apply(OUTER, reshape(xs, tuple(xs.shape[:-1])),
                        reshape(ys, tuple(ys.shape[:-2]) + tuple(ys.shape[-1:])))
        else:
            out = apply(MUL, xs, ys)
    else:
        out = apply(op, xs, ys)
    shape = tuple(out.shape)
    if nx == 1:
        shape = shape[:-2] + shape[-1:]
    if ny == 1:
        shape = shape[:-1]
    return reshape(out, shape), 0


def _as_matrices(t: Any, bdim: Any, ndim: int, before: bool) -> Any:
    """A 1-D sample as a (1, k) row (left operand) or (k, 1) column (right), batch first."""
    t = front(t, bdim)
    if ndim != 1:
        return t
    shape = tuple(t.shape)
    return reshape(t, shape[:-1] + (1, shape[-1]) if before else shape + (1,))


def _einsum(op: Op, args: Any, bdims: Any, size: int, /, equation: str) -> Any:
    lhs, rhs = equation.split("->")
    free = [c for c in string.ascii_letters if c not in equation]
    if not free:
        raise VmapError(f"vmap: einsum '{equation}' uses every letter; none is left for the batch")
    letter = free[0]
    subs = lhs.split(",")
    operands = []
    for i, (a, b) in enumerate(zip(args, bdims)):
        if b is not None:
            operands.append(front(a, b))
            subs[i] = letter + subs[i]
        else:
            operands.append(a)
    return apply(op, *operands, equation=",".join(subs) + "->" + letter + rhs), 0


def _outer(op: Op, args: Any, bdims: Any, size: int, /) -> Any:
    """The batch joins the stack (an unbatched operand is broadcast to it, a view)."""
    a, c = (materialize(t, b, size) for t, b in zip(args, bdims))
    return apply(op, a, c), 0


RULES = {"matmul": _matmul, "einsum": _einsum, "func.outer": _outer}
