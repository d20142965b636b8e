"""The optional MKL GEMM provider of compiled programs, against NumPy's matmul (the oracle).

The MKL tests skip cleanly where the ``mkl`` wheel is not installed (CI); the provider's
fallback (the op's own kernel) is tested everywhere.
"""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.compiler as pc
from pullback.compiler import Node, _gemm
from pullback.registry import get_op

needs_mkl = pytest.mark.skipif(_gemm.provider("auto") != "mkl",
                               reason="MKL is not installed (pip install pullback-compiler[mkl])")


def _layouts(rng: np.random.Generator, dtype: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Operand pairs in every layout a compiled program hands its products."""
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
        (r(1, 5), r(5, 1)),
    ]


@needs_mkl
@pytest.mark.parametrize("dtype, rtol", [("float32", 2e-5), ("float64", 1e-12)])
def test_mkl_matmul_matches_numpy(dtype: str, rtol: float) -> None:
    mkl = _gemm._mkl()
    for x, y in _layouts(np.random.default_rng(0), dtype):
        expected = np.matmul(x.astype(np.float64), y.astype(np.float64))
        got = _gemm.mkl_matmul(mkl, x, y)
        assert got is not None, (x.shape, x.strides, y.shape, y.strides)
        assert got.dtype == x.dtype and got.shape == expected.shape and got.flags.c_contiguous
        scale = np.abs(x).max() * np.abs(y).max() * x.shape[-1]
        np.testing.assert_allclose(got, expected, rtol=0, atol=rtol * scale)


@needs_mkl
def test_products_planned_before_reuse_their_plan_on_new_arrays(monkeypatch) -> None:
    """A product of layouts seen before skips the planning and gives what a fresh plan gives on
    the same arrays; a layout whose operand is copied first (or a stack) is planned each time."""
    mkl = _gemm._mkl()
    planned = []
    plan = _gemm._operands
    monkeypatch.setattr(_gemm, "_operands", lambda *a: planned.append(1) or plan(*a))
    monkeypatch.setattr(_gemm, "_PLANS", {})
    seen = _layouts(np.random.default_rng(1), "float32")
    new = _layouts(np.random.default_rng(2), "float32")  # the same layouts, other values
    for (x, y), (x2, y2) in zip(seen, new):
        assert (x.shape, x.strides, y.shape, y.strides) == (x2.shape, x2.strides, y2.shape,
                                                             y2.strides)
        _gemm.mkl_matmul(mkl, x, y)
        before = len(planned)
        reused = _gemm.mkl_matmul(mkl, x2, y2)
        single = y.ndim == 2 and (x.ndim == 2 or x.flags.c_contiguous)  # one GEMM, no stack
        copied = _gemm._operand(x) is None or _gemm._operand(y) is None
        assert (len(planned) == before) == (single and not copied), (x.shape, x.strides)
        monkeypatch.setattr(_gemm, "_PLANS", {})
        np.testing.assert_array_equal(reused, _gemm.mkl_matmul(mkl, x2, y2))


@needs_mkl
def test_mkl_declines_what_it_does_not_take() -> None:
    """Integers, mixed dtypes, 1-D operands and empty products go to NumPy's kernel."""
    mkl = _gemm._mkl()
    f32 = np.ones((3, 3), np.float32)
    for x, y in [(np.ones((3, 3), np.int64), np.ones((3, 3), np.int64)),
                 (f32, f32.astype(np.float64)), (np.ones(3, np.float32), f32),
                 (np.ones((0, 3), np.float32), f32), (np.ones((3, 0), np.float32),
                                                       np.ones((0, 2), np.float32))]:
        assert _gemm.mkl_matmul(mkl, x, y) is None
    matmul = _gemm._matmul(get_op("matmul").kernel_for("cpu"), mkl)
    x = np.ones((3, 0), np.float32)
    np.testing.assert_array_equal(matmul(x, np.ones((0, 2), np.float32)), np.zeros((3, 2)))


@needs_mkl
def test_linear_through_mkl_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    w = rng.standard_normal((3, 5)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    linear = _gemm._linear(get_op("nn.linear").kernel_for("cpu"), _gemm._mkl())
    for bias in (b, None):
        expected = get_op("nn.linear").kernel_for("cpu")(x, w, bias)
        np.testing.assert_allclose(linear(x, w, bias), expected, rtol=1e-5, atol=1e-5)


def test_compile_runs_numpy_products_unless_asked_and_says_which() -> None:
    """By default a compiled program's products are the ops' own kernels (results as eager's,
    bit for bit here); ``gemm`` is checked, and ``"mkl"`` without MKL is an ImportError."""
    f = pc.compile(lambda a, b: (a @ b) * 2.0 + 1.0)
    assert f.gemm == "numpy"
    rng = np.random.default_rng(2)
    a, b = (pb.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((6, 5), (5, 4)))
    eager = f(a, b).array
    np.testing.assert_array_equal(f(a, b).array, eager)
    with pytest.raises(ValueError, match="gemm must be one of"):
        pc.compile(lambda a: a, gemm="openblas")


def test_without_mkl_auto_is_numpy_and_mkl_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_gemm, "_loaded", [None])  # as where the mkl wheel is not installed
    assert pc.gemm_provider("auto") == "numpy"
    assert pc.compile(lambda a: a, gemm="auto").gemm == "numpy"
    with pytest.raises(ImportError, match=r"pullback-compiler\[mkl\]"):
        pc.compile(lambda a: a, gemm="mkl")
    wrap = _gemm.faster_products("cpu")
    for name in ("matmul", "nn.linear"):
        kernel = get_op(name).kernel_for("cpu")
        assert wrap(Node(name, (), {}, []), kernel) is kernel


@needs_mkl
def test_run_graph_keeps_numpy_products_and_compile_uses_mkl() -> None:
    """``run_graph`` reproduces eager results bit for bit (NumPy's GEMM); only compiled
    programs take MKL's."""
    rng = np.random.default_rng(4)
    a, b = (pb.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((64, 48), (48, 40)))
    graph = pc.trace(lambda p, q: p @ q, a, b)
    np.testing.assert_array_equal(pc.run_graph(graph, a.array, b.array)[0], (a @ b).array)
    fast = pc.lower(graph, gemm="mkl").run([a.array, b.array])[0]
    np.testing.assert_array_equal(fast, _gemm.mkl_matmul(_gemm._mkl(), a.array, b.array))
    f = pc.compile(lambda p, q: p @ q, gemm="mkl")
    assert f.gemm == "mkl"
    f(a, b)
    np.testing.assert_allclose(f(a, b).array, (a @ b).array, rtol=1e-5, atol=1e-5)


@needs_mkl
def test_compiled_step_with_mkl_matches_eager() -> None:
    """A compiled MLP step on MKL gives eager's loss and gradients to float32 tolerance."""
    from pullback import nn

    rng = np.random.default_rng(3)
    x = pb.tensor(rng.standard_normal((32, 16)).astype(np.float32))

    def make() -> tuple[nn.Module, object]:
        pb.manual_seed(0)
        model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))

        def step(inp: pb.Tensor) -> pb.Tensor:
            model.zero_grad()
            loss = (model(inp) ** 2).mean()
            loss.backward()
            return loss

        return model, step

    eager_model, eager_step = make()
    model, step = make()
    compiled = pc.compile(step, gemm="mkl")
    for _ in range(3):
        expected, got = eager_step(x), compiled(x)
        np.testing.assert_allclose(got.array, expected.array, rtol=1e-5)
    for p, q in zip(model.parameters(), eager_model.parameters()):
        np.testing.assert_allclose(p.grad.array, q.grad.array, rtol=1e-4, atol=1e-6)


@needs_mkl
def test_large_products_split_over_the_threads_match_numpy() -> None:
    """With two threads a large product runs as row blocks (a stack as blocks of matrices)."""
    rng = np.random.default_rng(5)
    cases = [(rng.standard_normal((300, 200)).astype(np.float32),
              rng.standard_normal((150, 200)).astype(np.float32).T),
             (rng.standard_normal((200, 301)).astype(np.float32).T,
              rng.standard_normal((200, 90)).astype(np.float32)),
             (rng.standard_normal((33, 64, 40)), rng.standard_normal((33, 40, 64)))]
    threads = pb.get_num_threads()
    pb.set_num_threads(2)
    try:
        for x, y in cases:
            got = _gemm.mkl_matmul(_gemm._mkl(), x, y)
            expected = np.matmul(x.astype(np.float64), y.astype(np.float64))
            np.testing.assert_allclose(got, expected, rtol=0,
                                       atol=2e-5 * np.abs(expected).max())
    finally:
        pb.set_num_threads(threads)


def _epilogue_programs(fn, *arrays):
    """``fn`` traced and lowered twice: on MKL (its epilogues run block by block after the
    product) and on NumPy's products (the loop over the whole product)."""
    tensors = [pb.tensor(a) for a in arrays]
    graph, _ = pc.optimize(pc.trace(fn, *tensors))
    assert any(n.op == "compiler.matmul_epilogue" for n in graph.nodes), graph
    return pc.lower(graph, gemm="mkl"), pc.lower(graph, gemm="numpy")


@needs_mkl
@pytest.mark.parametrize("packing", ["packed", "gemm per block"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_epilogues_run_block_by_block_after_the_product(monkeypatch, threads, dtype,
                                                        packing) -> None:
    """A product with its loop (a flat loop, and one with a per-row input and a bias row) run
    block by block: the blocks of 64 or 128 rows leave a remainder on 300 rows, and every row
    gets the loop over its product, as on NumPy's products (to the products' rounding). Each
    share of several blocks packs the right operand once (MKL's packed API), or, without the
    packed API's addresses, calls ?gemm on every block: both give the same rows."""
    from pullback.compiler._fused import FusedKernel

    if packing != "packed":
        monkeypatch.setitem(_gemm._mkl().pack, dtype, _gemm.NO_PACKING)
    monkeypatch.setattr(_gemm, "_PLANS", {})  # plans keep the addresses they were made with
    ran = []
    real = FusedKernel.run_after_product

    def spy(self, *args):
        result = real(self, *args)
        ran.append(result is not NotImplemented)
        return result

    monkeypatch.setattr(FusedKernel, "run_after_product", spy)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((300, 96)).astype(dtype)
    w = rng.standard_normal((96, 512)).astype(dtype)
    h = rng.standard_normal((300, 512)).astype(dtype)
    stat = rng.standard_normal((300, 1)).astype(dtype)
    bias = rng.standard_normal(512).astype(dtype)
    cases = [(lambda a, b, c: (a @ b) * c + c, (x, w, h)),
             (lambda a, b, s, r: (a @ b - s) * r, (x, w, stat, bias)),
             (lambda a, b: pb.relu(a @ b.T), (x, w.T.copy()))]
    before = pb.get_num_threads()
    pb.set_num_threads(threads)
    try:
        for fn, arrays in cases:
            fused, unfused = _epilogue_programs(fn, *arrays)
            ran.clear()
            got = fused.run(list(arrays))[0]
            assert ran == [True]
            expected = unfused.run(list(arrays))[0]
            tol = 1e-4 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * np.abs(expected).max())
    finally:
        pb.set_num_threads(before)


@needs_mkl
def test_epilogues_whose_loop_rows_are_not_the_products_run_unfused(monkeypatch) -> None:
    """A stack of products (attention's) keeps the product, then the loop over all of it."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 3, 20, 8)).astype(np.float32)
    b = rng.standard_normal((4, 3, 8, 20)).astype(np.float32)
    fused, unfused = _epilogue_programs(lambda p, q: (p @ q) * 0.5, a, b)
    np.testing.assert_allclose(fused.run([a, b])[0], unfused.run([a, b])[0], rtol=1e-5,
                               atol=1e-5)
