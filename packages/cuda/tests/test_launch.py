"""Host-side launch planning, on the CPU: the matmul plan is checked by reading NumPy arrays the
way the kernel reads device memory (element (b, r, c) at ``b*batch_stride + r*ld + c``, or
``c*ld + r`` transposed, from the first element); the row kernels' block and grid sizes."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from pullback.cuda._kernels import adamw, layer_norm
from pullback.cuda._kernels._rows import row_threads
from pullback.cuda._kernels.matmul import TILE, Operand, operand_layout, plan_matmul, readable

RNG = np.random.default_rng(0)


def _plan(a: np.ndarray, b: np.ndarray):
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a2, la = readable(np, a, batch)
    b2, lb = readable(np, b, batch)
    aligned = a2.ctypes.data % 16 == 0 and b2.ctypes.data % 16 == 0
    return plan_matmul(a2.shape, la, b2.shape, lb, a2.dtype.name, aligned), a2, b2


def _as_kernel_reads(x: np.ndarray, op: Operand, batch: int, rows: int, cols: int) -> np.ndarray:
    it = x.itemsize
    strides = (op.batch_stride * it,) + ((it, op.ld * it) if op.transposed else (op.ld * it, it))
    return as_strided(x, shape=(batch, rows, cols), strides=strides)


def _kernel_result(plan, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    A = _as_kernel_reads(a, plan.a, plan.batch, plan.m, plan.k).astype(np.float64)
    B = _as_kernel_reads(b, plan.b, plan.batch, plan.k, plan.n).astype(np.float64)
    return (A @ B).reshape(plan.out_shape)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


CASES = {
    "square": (lambda: (_f32(64, 64), _f32(64, 64)), "matmul_f32_nn_vec"),
    "ragged": (lambda: (_f32(130, 7), _f32(7, 259)), "matmul_f32_nn"),
    "a_transposed": (lambda: (_f32(12, 20).T, _f32(12, 8)), "matmul_f32_tn_vec"),
    "b_transposed_linear": (lambda: (_f32(3, 5, 16), _f32(24, 16).T), "matmul_f32_nt_vec"),
    "both_transposed": (lambda: (_f32(8, 4).T, _f32(12, 8).T), "matmul_f32_tt_vec"),
    "batched": (lambda: (_f32(6, 10, 12), _f32(6, 12, 9)), "matmul_f32_nn"),
    "broadcast_a": (lambda: (_f32(10, 12), _f32(6, 12, 8)), "matmul_f32_nn_vec"),
    "batch_4d": (lambda: (_f32(2, 3, 8, 4), _f32(2, 3, 4, 8)), "matmul_f32_nn_vec"),
    "partial_broadcast": (lambda: (_f32(2, 1, 8, 4), _f32(1, 3, 4, 8)), "matmul_f32_nn_vec"),
    "strided_cols": (lambda: (_f32(8, 16)[:, ::2], _f32(8, 8)), "matmul_f32_nn_vec"),
    "batch_transposed": (lambda: (_f32(4, 12, 8).transpose(0, 2, 1), _f32(4, 12, 4)),
                         "matmul_f32_tn_vec"),
    "attention_scores": (lambda: (lambda q, k: (q, k.swapaxes(-1, -2)))(
        _f32(2, 3, 16, 8), _f32(2, 3, 16, 8)), "matmul_f32_nt_vec"),
    "float16": (lambda: (_f32(9, 5).astype(np.float16), _f32(5, 3).astype(np.float16)),
                "matmul_f16_nn"),
    "row_vector": (lambda: (_f32(1, 8), _f32(8, 4)), "matmul_f32_nn_vec"),
    "column_result": (lambda: (_f32(8, 8), _f32(8, 1)), "matmul_f32_nn"),
    "broadcast_rows": (lambda: (np.broadcast_to(_f32(1, 8), (6, 8)), _f32(8, 4)),
                       "matmul_f32_nn_vec"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_reads_what_numpy_multiplies(case):
    make, kernel = CASES[case]
    a, b = make()
    plan, a2, b2 = _plan(a, b)
    assert plan is not None and plan.kernel == kernel
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(_kernel_result(plan, a2, b2), expected, rtol=1e-12, atol=1e-12)
    assert plan.grid == (-(-plan.n // TILE), -(-plan.m // TILE), plan.batch)


def test_shared_weight_folds_the_batch_into_rows():
    plan, _, _ = _plan(_f32(4, 50, 16), _f32(24, 16).T)
    assert (plan.m, plan.batch, plan.grid) == (200, 1, (1, 2, 1))
    assert plan.out_shape == (4, 50, 24)


def test_views_are_read_in_place_when_possible_and_copied_otherwise():
    a = _f32(8, 16)
    assert _plan(a.T, a)[1].base is not None  # a transposed view, not copied
    flipped = a[::-1]
    assert operand_layout(flipped.shape, flipped.strides, 4) is None
    assert _plan(flipped, _f32(16, 4))[1].flags.c_contiguous


@pytest.mark.parametrize("a, b", [
    (np.zeros((3,), np.float32), np.zeros((3, 2), np.float32)),      # 1-D: generic kernel
    (np.zeros((0, 3), np.float32), np.zeros((3, 2), np.float32)),    # empty
    (np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32)),    # K mismatch: NumPy's error
    (np.zeros((2, 3), np.float64), np.zeros((3, 2), np.float64)),    # float64: cuBLAS
    (np.zeros((2, 3), np.int64), np.zeros((3, 2), np.int64)),
])
def test_cases_left_to_the_generic_kernel(a, b):
    la = operand_layout(a.shape, a.strides, a.itemsize) if a.ndim >= 2 else None
    lb = operand_layout(b.shape, b.strides, b.itemsize)
    assert plan_matmul(a.shape, la, b.shape, lb, a.dtype.name, True) is None


def test_too_many_batches_are_left_to_cublas():
    a = Operand(False, 4, 16)
    assert plan_matmul((70000, 4, 4), a, (4, 4), Operand(False, 4, 0), "float32", True) is not None
    b = Operand(False, 4, 16)
    assert plan_matmul((70000, 4, 4), a, (70000, 4, 4), b, "float32", True) is None


def test_vec_needs_alignment_and_multiples_of_four():
    ok = plan_matmul((8, 8), Operand(False, 8, 0), (8, 8), Operand(False, 8, 0), "float32", True)
    assert ok.kernel.endswith("_vec")
    unaligned = plan_matmul((8, 8), Operand(False, 8, 0), (8, 8), Operand(False, 8, 0),
                            "float32", False)
    assert not unaligned.kernel.endswith("_vec")
    odd_ld = plan_matmul((8, 8), Operand(False, 10, 0), (8, 8), Operand(False, 8, 0),
                         "float32", True)
    assert not odd_ld.kernel.endswith("_vec")
    bf16 = plan_matmul((8, 8), Operand(False, 8, 0), (8, 8), Operand(False, 8, 0), "bfloat16", True)
    assert bf16.kernel == "matmul_bf16_nn"


@pytest.mark.parametrize("cols, threads", [(1, 32), (32, 32), (33, 64), (384, 512), (768, 1024),
                                           (50257, 1024)])
def test_row_threads_are_whole_warps_covering_short_rows(cols, threads):
    assert row_threads(cols) == threads and threads % 32 == 0


@pytest.mark.parametrize("rows, cols", [(1, 1), (7, 384), (16384, 384), (100000, 33), (3, 5000)])
def test_layer_norm_param_grid_covers_every_row_once(rows, cols):
    col_blocks, chunks, per_chunk = layer_norm.param_grid(rows, cols)
    assert col_blocks * layer_norm.PARAM_COLS >= cols > (col_blocks - 1) * layer_norm.PARAM_COLS
    covered = [min(rows, (c + 1) * per_chunk) - c * per_chunk for c in range(chunks)]
    assert sum(covered) == rows and min(covered) > 0  # no empty chunk, no row twice
    assert per_chunk >= min(rows, 32)


@pytest.mark.parametrize("n, blocks", [(0, 1), (1, 1), (256, 1), (257, 2), (10**9, 4096)])
def test_adam_grid(n, blocks):
    assert adamw.adam_grid(n) == blocks
