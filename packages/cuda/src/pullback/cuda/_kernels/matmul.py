"""The tiled matmul kernel (``matmul.cu``): planning on the host, launching, and the ``matmul``
op's cuda kernel.

The plan (pure Python, tested on the CPU) says how the kernel reads each operand: as stored or
transposed (so ``x @ w.T`` and the transposed products of backward need no copy), with which
leading dimension and batch stride, whether the float4 variant applies, and the grid. Operands
whose memory cannot be described that way are copied to C order first; cases the kernel does not
cover (1-D operands, mixed or unsupported dtypes, empty matrices, more than 65535 batches) go to
the generic kernel (cuBLAS through CuPy).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

TILE = 128  # rows and columns of C per block (MM_BM, MM_BN in matmul.cu)
THREADS = 256  # MM_THREADS
MAX_GRID_YZ = 65535
DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


@dataclass(frozen=True)
class Operand:
    """How the kernel reads one (..., rows, cols) operand: element (b, r, c) is at
    ``b * batch_stride + (c * ld + r if transposed else r * ld + c)`` from the first element."""

    transposed: bool
    ld: int
    batch_stride: int


def operand_layout(shape: Sequence[int], strides: Sequence[int],
                   itemsize: int) -> Operand | None:
    """The :class:`Operand` of an array with ``shape`` and byte ``strides``, or ``None`` when
    its memory is not one (batch of) row- or column-major matrix (then copy it to C order)."""
    if any(s % itemsize or s < 0 for s in strides):
        return None  # negative strides (flipped views) are copied
    *batch, rows, cols = shape
    *batch_strides, s_rows, s_cols = (s // itemsize for s in strides)
    # A size-1 axis is never stepped along, so its stride may be anything. The kernel only
    # reads operands, so rows may overlap (ld 0 for broadcast rows is fine).
    if s_cols == 1 or cols == 1:
        layout = (False, s_rows if rows > 1 else cols)
    elif s_rows == 1 or rows == 1:
        layout = (True, s_cols if cols > 1 else rows)
    else:
        return None
    stepped = [(n, s) for n, s in zip(batch, batch_strides) if n > 1]
    if not stepped:
        batch_stride = 0
    else:
        batch_stride = stepped[-1][1]
        for (_, outer), (n, inner) in zip(stepped, stepped[1:]):
            if outer != n * inner:  # not one uniform stride over the flattened batch
                return None
    return Operand(layout[0], layout[1], batch_stride)


@dataclass(frozen=True)
class MatmulPlan:
    """One launch of ``matmul.cu``: C (batch, m, n) = A (batch, m, k) @ B (batch, k, n)."""

    kernel: str
    m: int
    n: int
    k: int
    batch: int
    a: Operand
    b: Operand
    grid: tuple[int, int, int]
    out_shape: tuple[int, ...]


def plan_matmul(a_shape: Sequence[int], a: Operand, b_shape: Sequence[int], b: Operand,
                dtype: str, aligned: bool) -> MatmulPlan | None:
    """The launch for ``A @ B`` (NumPy's matmul rules, both operands at least 2-D), or ``None``
    when the kernel does not cover the case.

    Args:
        a_shape, b_shape: the operands' shapes (batch dims broadcast as in NumPy).
        a, b: their layouts (:func:`operand_layout`) after broadcasting to the output's batch.
        dtype: the common dtype's name.
        aligned: whether both data pointers are 16-byte aligned (the float4 variant needs it).
    """
    suffix = DTYPES.get(dtype)
    if suffix is None or len(a_shape) < 2 or len(b_shape) < 2:
        return None
    m, k = a_shape[-2:]
    k2, n = b_shape[-2:]
    if k != k2 or 0 in (m, n, k):
        return None
    try:
        batch_shape = tuple(np.broadcast_shapes(tuple(a_shape[:-2]), tuple(b_shape[:-2])))
    except ValueError:
        return None
    batch = math.prod(batch_shape)
    if batch > 1 and b.batch_stride == 0 and not a.transposed and a.batch_stride == m * a.ld:
        # B is shared by every batch and A's batches are stacked rows: one tall product uses the
        # tiles better than a batch of short ones (the x @ w.T of a linear layer).
        a = Operand(False, a.ld, 0)
        m, batch = m * batch, 1
    grid = (-(-n // TILE), -(-m // TILE), batch)
    if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
        return None
    vec = suffix == "f32" and aligned and _vec_ok(a, m, k) and _vec_ok(b, k, n) and n % 4 == 0
    name = f"matmul_{suffix}_{'t' if a.transposed else 'n'}{'t' if b.transposed else 'n'}"
    return MatmulPlan(name + ("_vec" if vec else ""), m, n, k, batch, a, b, grid,
                      batch_shape + (a_shape[-2], n))


def _vec_ok(op: Operand, rows: int, cols: int) -> bool:
    """float4 reads need the contiguous extent, the leading dim and the batch stride to be
    multiples of 4 elements."""
    contiguous = rows if op.transposed else cols
    return contiguous % 4 == 0 and op.ld % 4 == 0 and op.batch_stride % 4 == 0


def matmul(a: Any, b: Any) -> Any:
    """``a @ b`` with the custom kernel, or ``NotImplemented`` when it does not apply."""
    import cupy

    from ._module import launch

    if a.ndim < 2 or b.ndim < 2 or a.dtype != b.dtype or a.dtype.name not in DTYPES:
        return NotImplemented
    try:
        batch_shape = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        return NotImplemented  # the generic kernel raises NumPy's error
    a, la = readable(cupy, a, batch_shape)
    b, lb = readable(cupy, b, batch_shape)
    aligned = a.array.ptr % 16 == 0 and b.array.ptr % 16 == 0
    plan = plan_matmul(a.shape, la, b.shape, lb, a.dtype.name, aligned)
    if plan is None:
        return NotImplemented
    out = cupy.empty(plan.out_shape, dtype=a.dtype)
    launch("matmul", plan.kernel, plan.grid, (THREADS,), kernel_args(plan, a, b, out))
    return out


def kernel_args(plan: MatmulPlan, a: Any, b: Any, out: Any) -> tuple[Any, ...]:
    """The kernel's arguments, in the order and C widths of ``PB_MATMUL_KERNEL``."""
    i32, i64 = np.int32, np.int64
    return (a, b, out, i32(plan.m), i32(plan.n), i32(plan.k), i64(plan.a.ld), i64(plan.b.ld),
            i64(plan.n), i64(plan.a.batch_stride), i64(plan.b.batch_stride),
            i64(0 if plan.batch == 1 else plan.m * plan.n))


def readable(xp: Any, x: Any, batch_shape: tuple[int, ...]) -> tuple[Any, Operand]:
    """``x`` broadcast to the output's batch shape, copied to C order if the kernel cannot
    read it as it is, and its layout (``xp``: CuPy, or NumPy in the tests)."""
    if math.prod(x.shape[:-2]) > 1 and x.shape[:-2] != batch_shape:
        x = xp.broadcast_to(x, batch_shape + x.shape[-2:])  # stride-0 batch dims
    layout = operand_layout(x.shape, x.strides, x.itemsize)
    if layout is None:
        x = xp.ascontiguousarray(x)
        layout = operand_layout(x.shape, x.strides, x.itemsize)
    return x, layout  # type: ignore[return-value]
