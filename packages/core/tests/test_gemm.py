"""The CPU backend's GEMM provider (pullback._gemm): MKL where the ``mkl`` wheel is installed,
else NumPy's matmul, chosen once per process by ``$PULLBACK_GEMM``, loaded on the first product.

The oracle is NumPy's matmul in float64. The MKL tests skip cleanly where MKL is not the
provider (no ``mkl`` wheel: another platform, or ``PULLBACK_GEMM=numpy``); the choice itself and
the NumPy fallback are tested everywhere.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import pullback as pb
from pullback import _gemm
from pullback.registry import get_op

needs_mkl = pytest.mark.skipif(_gemm.provider() != "mkl",
                               reason="MKL is not this process's GEMM provider (pip install mkl)")


@pytest.fixture(autouse=True)
def every_size_on_mkl(request, monkeypatch):
    """The layouts below are small: MKL takes them here (the size policy has its own test)."""
    if request.function is not test_small_and_single_row_products_are_numpys_and_large_ones_mkls:
        monkeypatch.setattr(_gemm, "_MIN_MKL_MACS", 0)
    monkeypatch.setattr(_gemm, "_PLANS", {})


def _layouts(rng: np.random.Generator, dtype: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Operand pairs in every layout the ops hand their products."""
    def r(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(dtype)

    qkv = r(4, 8, 3 * 12)  # attention's heads: strided views of one projection
    q, k, v = (qkv[..., i * 12:(i + 1) * 12].reshape(4, 8, 3, 4).transpose(0, 2, 1, 3)
               for i in range(3))
    return [
        (r(7, 5), r(5, 3)),                       # plain
        (r(5, 7).T, r(5, 3)),                     # transposed left (a weight gradient)
        (r(7, 5), r(3, 5).T),                     # transposed right (linear's w.T)
        (r(5, 7).T, r(3, 5).T),
        (r(4, 6, 5), r(5, 3)),                    # a stack times a matrix: one GEMM
        (r(4, 6, 5).transpose(1, 0, 2), r(5, 3)),  # ... not contiguous: a batch
        (q, k.swapaxes(-1, -2)),                  # strided stacks
        (r(4, 3, 8, 8), v),
        (r(1, 3, 6, 5), r(4, 1, 5, 2)),           # broadcast stacks
        (r(6, 5), r(4, 5, 2)),                    # a matrix times a stack
        (r(9, 5)[::2], r(5, 6)[:, ::3]),          # no unit stride: copied first
        (r(2, 5), r(5, 1)),                       # one column
    ]


def _close(got: np.ndarray, x: np.ndarray, y: np.ndarray, rtol: float) -> None:
    expected = np.matmul(x.astype(np.float64), y.astype(np.float64))
    assert got.dtype == x.dtype and got.shape == expected.shape and got.flags.c_contiguous
    scale = np.abs(x).max() * np.abs(y).max() * x.shape[-1]
    np.testing.assert_allclose(got, expected, rtol=0, atol=rtol * scale)


@needs_mkl
@pytest.mark.parametrize("dtype, rtol", [("float32", 2e-5), ("float64", 1e-12)])
def test_mkl_products_match_numpy_in_every_layout(dtype: str, rtol: float) -> None:
    for x, y in _layouts(np.random.default_rng(0), dtype):
        got = _gemm.matmul(x, y)
        assert got is not None, (x.shape, x.strides, y.shape, y.strides)
        _close(got, x, y, rtol)


@needs_mkl
def test_the_matmul_op_runs_on_the_provider() -> None:
    """Eager ``matmul`` (and so ``bmm``, ``mm``, ``@``) gives MKL's product, bit for bit."""
    for x, y in _layouts(np.random.default_rng(8), "float32"):
        got = (pb.tensor(x) @ pb.tensor(y)).array
        np.testing.assert_array_equal(got, _gemm.matmul(x, y))


@needs_mkl
def test_products_planned_before_reuse_their_plan_on_new_arrays(monkeypatch) -> None:
    """A product of layouts seen before skips the planning and gives what a fresh plan gives on
    the same arrays; a layout whose operand is copied first (or a stack) is planned each time."""
    planned = []
    plan = _gemm._operands
    monkeypatch.setattr(_gemm, "_operands", lambda *a: planned.append(1) or plan(*a))
    monkeypatch.setattr(_gemm, "_PLANS", {})
    seen = _layouts(np.random.default_rng(1), "float32")
    new = _layouts(np.random.default_rng(2), "float32")  # the same layouts, other values
    for (x, y), (x2, y2) in zip(seen, new):
        assert (x.shape, x.strides, y.shape, y.strides) == (x2.shape, x2.strides, y2.shape,
                                                             y2.strides)
        _gemm.matmul(x, y)
        before = len(planned)
        reused = _gemm.matmul(x2, y2)
        single = y.ndim == 2 and (x.ndim == 2 or x.flags.c_contiguous)  # one GEMM, no stack
        copied = _gemm._operand(x) is None or _gemm._operand(y) is None
        assert (len(planned) == before) == (single and not copied), (x.shape, x.strides)
        monkeypatch.setattr(_gemm, "_PLANS", {})
        np.testing.assert_array_equal(reused, _gemm.matmul(x2, y2))


@needs_mkl
def test_mkl_declines_what_it_does_not_take() -> None:
    """Integers, mixed dtypes, 1-D operands, empty and single-row products go to NumPy's
    kernel (a single row: OpenBLAS's gemv is faster than MKL's gemm there)."""
    f32 = np.ones((3, 3), np.float32)
    for x, y in [(np.ones((3, 3), np.int64), np.ones((3, 3), np.int64)),
                 (f32, f32.astype(np.float64)), (np.ones(3, np.float32), f32),
                 (np.ones((1, 3), np.float32), f32), (np.ones((2, 1, 3), np.float32)[0], f32),
                 (np.ones((0, 3), np.float32), f32), (np.ones((3, 0), np.float32),
                                                       np.ones((0, 2), np.float32))]:
        assert _gemm.matmul(x, y) is None
    matmul = get_op("matmul").kernel_for("cpu")
    x = np.ones((3, 0), np.float32)
    np.testing.assert_array_equal(matmul(x, np.ones((0, 2), np.float32)), np.zeros((3, 2)))
    np.testing.assert_array_equal(matmul(np.arange(6).reshape(2, 3), np.arange(3)), [5, 14])


@needs_mkl
@pytest.mark.parametrize("rows", [2, 3, 9, 300])
def test_products_split_over_the_threads_match_numpy(rows: int) -> None:
    """With two threads a product runs as row shares (a stack as shares of its matrices)."""
    rng = np.random.default_rng(5)
    cases = [(rng.standard_normal((rows, 200)).astype(np.float32),
              rng.standard_normal((150, 200)).astype(np.float32).T),
             (rng.standard_normal((200, rows)).astype(np.float32).T,
              rng.standard_normal((200, 190)).astype(np.float32)),
             (rng.standard_normal((rows, 64, 40)), rng.standard_normal((rows, 40, 64)))]
    threads = pb.get_num_threads()
    pb.set_num_threads(2)
    try:
        for x, y in cases:
            _close(_gemm.matmul(x, y), x, y, 2e-5)
    finally:
        pb.set_num_threads(threads)


def test_the_provider_is_read_from_the_environment_once(monkeypatch) -> None:
    """``PULLBACK_GEMM=numpy`` gives NumPy's products; a bad value names the variable; ``mkl``
    where MKL cannot be found says what to install."""
    monkeypatch.setattr(_gemm, "_chosen", [])
    monkeypatch.setenv("PULLBACK_GEMM", "numpy")
    assert _gemm.provider() == "numpy"
    monkeypatch.setenv("PULLBACK_GEMM", "mkl")  # read once: no effect now
    assert _gemm.provider() == "numpy"
    x = np.random.default_rng(3).standard_normal((40, 30)).astype(np.float32)
    assert _gemm.matmul(x, x.T) is None
    np.testing.assert_array_equal((pb.tensor(x) @ pb.tensor(x.T)).array, x @ x.T)
    monkeypatch.setattr(_gemm, "_chosen", [])
    monkeypatch.setenv("PULLBACK_GEMM", "openblas")
    with pytest.raises(ValueError, match="PULLBACK_GEMM must be one of auto, mkl, numpy"):
        _gemm.provider()
    monkeypatch.setattr(_gemm, "_chosen", [])
    monkeypatch.setenv("PULLBACK_GEMM", "mkl")
    monkeypatch.setenv("PULLBACK_MKL", "/nonexistent/libmkl_rt.so.2")
    with pytest.raises(ImportError, match="pip install mkl"):
        _gemm.provider()
    monkeypatch.setattr(_gemm, "_chosen", [])
    monkeypatch.setenv("PULLBACK_GEMM", "auto")
    assert _gemm.provider() == "numpy"  # auto: NumPy where MKL is missing


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_import_does_not_load_mkl_and_the_first_product_does() -> None:
    """``import pullback`` stays fast: MKL is loaded by the first matrix product."""
    code = ("import pullback as pb\n"
            "def loaded():\n"
            "    return 'libmkl_rt' in open('/proc/self/maps').read()\n"
            "before = loaded()\n"
            "pb.ones(4, 4) @ pb.ones(4, 4)\n"
            "print(before, loaded(), pb.backends.backends()['cpu'].gemm_provider())\n")
    env = {k: v for k, v in os.environ.items() if k != "PULLBACK_GEMM"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300, check=True).stdout.split()
    assert out[0] == "False"
    assert out[1] == str(out[2] == "mkl")


@needs_mkl
def test_small_and_single_row_products_are_numpys_and_large_ones_mkls() -> None:
    """Below ``_MIN_MKL_MACS`` multiply-adds (or with one row) a product is NumPy's, whose call
    costs less than MKL's; from there on MKL's. A stack of products stays on MKL whatever its
    size."""
    rng = np.random.default_rng(9)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    small = rng.standard_normal((32, 64)).astype(np.float32)  # 131,072 multiply-adds
    large = rng.standard_normal((128, 64)).astype(np.float32)  # 128 x 64 x 64 = 2^19
    one_row = rng.standard_normal((1, 4096)).astype(np.float32)
    assert _gemm.matmul(small, w.T) is None
    assert _gemm.matmul(one_row, rng.standard_normal((4096, 512)).astype(np.float32)) is None
    _close(_gemm.matmul(large, w.T), large, w.T, 2e-5)
    stack = rng.standard_normal((3, 4, 5)).astype(np.float32)
    _close(_gemm.matmul(stack, stack.swapaxes(1, 2)), stack, stack.swapaxes(1, 2), 2e-5)
    # the eager op and the compiler's planned product follow the same policy
    assert _gemm.single_product(small, w.T) is None
    np.testing.assert_array_equal((pb.tensor(small) @ pb.tensor(w.T)).array, small @ w.T)
