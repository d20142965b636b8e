"""Compiled programs' matrix products run on core's GEMM provider (pullback._gemm), eager's:
a compiled step's results are eager's, bit for bit, with MKL's blocked product epilogues too.

The MKL tests skip cleanly where MKL is not the provider; the provider checks of ``compile``
are tested everywhere.
"""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.compiler as pc
from pullback import _gemm
from pullback.compiler import Node, _gemm as compiler_gemm
from pullback.registry import get_op

needs_mkl = pytest.mark.skipif(_gemm.provider() != "mkl",
                               reason="MKL is not this process's GEMM provider (pip install mkl)")


def test_compile_runs_the_process_provider_and_says_which() -> None:
    """``gemm`` defaults to the process's provider; naming it is accepted, naming the other is
    a ValueError that says how to choose, an unknown name another."""
    chosen = _gemm.provider()
    f = pc.compile(lambda a, b: (a @ b) * 2.0 + 1.0)
    assert f.gemm == chosen == pc.gemm_provider()
    assert pc.compile(lambda a: a, gemm=chosen).gemm == chosen
    other = "numpy" if chosen == "mkl" else "mkl"
    with pytest.raises((ValueError, ImportError), match=f"PULLBACK_GEMM={other}|pip install mkl"):
        pc.compile(lambda a: a, gemm=other)
    with pytest.raises(ValueError, match="gemm must be one of"):
        pc.compile(lambda a: a, gemm="openblas")


def test_without_mkl_auto_is_numpy_and_mkl_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_gemm, "_chosen", [None])  # as where the mkl wheel is not installed
    monkeypatch.setenv("PULLBACK_GEMM", "auto")
    assert pc.gemm_provider("auto") == "numpy"
    assert pc.compile(lambda a: a, gemm="auto").gemm == "numpy"
    with pytest.raises(ImportError, match="pip install mkl"):
        pc.compile(lambda a: a, gemm="mkl")
    wrap = compiler_gemm.faster_products("cpu")
    for name in ("matmul", "nn.linear", "compiler.matmul_epilogue"):
        kernel = get_op(name).kernel_for("cpu")
        assert wrap(Node(name, (), {}, []), kernel) is kernel


def test_run_graph_and_compiled_programs_give_eagers_products() -> None:
    rng = np.random.default_rng(4)
    a, b = (pb.tensor(rng.standard_normal(s).astype(np.float32)) for s in ((64, 48), (48, 40)))
    graph = pc.trace(lambda p, q: p @ q, a, b)
    eager = (a @ b).array
    np.testing.assert_array_equal(pc.run_graph(graph, a.array, b.array)[0], eager)
    np.testing.assert_array_equal(pc.lower(graph).run([a.array, b.array])[0], eager)
    f = pc.compile(lambda p, q: p @ q)
    f(a, b)
    np.testing.assert_array_equal(f(a, b).array, eager)


@pytest.mark.parametrize("threads", [1, 2])
def test_compiled_training_step_is_eagers_bit_for_bit(threads: int) -> None:
    """An MLP step (784 inputs: MKL's sums over them depend on the rows of a call) with GELU
    epilogues, compiled, gives eager's loss and gradients to the bit for three steps."""
    from pullback import nn

    rng = np.random.default_rng(3)
    x = pb.tensor(rng.standard_normal((300, 784)).astype(np.float32))

    def make() -> tuple[nn.Module, object]:
        pb.manual_seed(0)
        model = nn.Sequential(nn.Linear(784, 256), nn.GELU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))

        def step(inp: pb.Tensor) -> pb.Tensor:
            model.zero_grad()
            loss = (model(inp) ** 2).mean()
            loss.backward()
            return loss

        return model, step

    before = pb.get_num_threads()
    pb.set_num_threads(threads)
    try:
        eager_model, eager_step = make()
        model, step = make()
        compiled = pc.compile(step)
        for _ in range(3):
            expected, got = eager_step(x), compiled(x)
            np.testing.assert_array_equal(got.array, expected.array)
        entry = compiled.entries[-1]
        assert any(n.op == "compiler.matmul_epilogue" for n in entry.graph.nodes)
        for p, q in zip(model.parameters(), eager_model.parameters()):
            np.testing.assert_array_equal(p.grad.array, q.grad.array)
    finally:
        pb.set_num_threads(before)


def _epilogue_programs(fn, *arrays):
    """``fn`` traced and lowered: on MKL (its epilogues run share by share after the product),
    and its optimized graph run node by node (the product, then the loop over all of it)."""
    tensors = [pb.tensor(a) for a in arrays]
    graph, _ = pc.optimize(pc.trace(fn, *tensors))
    assert any(n.op == "compiler.matmul_epilogue" for n in graph.nodes), graph
    return pc.lower(graph), lambda values: pc.run_graph(graph, *values)


@needs_mkl
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_epilogues_run_share_by_share_after_the_product(monkeypatch, threads, dtype) -> None:
    """A product with its loop (a flat loop, and one with a per-row input and a bias row) run
    share by share: every row gets the loop over its product, the bits of the product followed
    by the loop (1000 inputs: MKL's sums depend on the rows of a call)."""
    from pullback.compiler._fused import FusedKernel

    monkeypatch.setattr(_gemm, "_PLANS", {})  # plans keep the addresses they were made with
    ran = []
    real = FusedKernel.run_after_product

    def spy(self, *args):
        result = real(self, *args)
        ran.append(result is not NotImplemented)
        return result

    monkeypatch.setattr(FusedKernel, "run_after_product", spy)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((301, 1000)).astype(dtype)
    w = rng.standard_normal((1000, 512)).astype(dtype)
    h = rng.standard_normal((301, 512)).astype(dtype)
    stat = rng.standard_normal((301, 1)).astype(dtype)
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
            np.testing.assert_array_equal(got, unfused(list(arrays))[0])
    finally:
        pb.set_num_threads(before)


@needs_mkl
def test_epilogues_whose_loop_rows_are_not_the_products_run_unfused() -> None:
    """A stack of products (attention's) keeps the product, then the loop over all of it."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((4, 3, 20, 8)).astype(np.float32)
    b = rng.standard_normal((4, 3, 8, 20)).astype(np.float32)
    fused, unfused = _epilogue_programs(lambda p, q: (p @ q) * 0.5, a, b)
    np.testing.assert_array_equal(fused.run([a, b])[0], unfused([a, b])[0])


@needs_mkl
@pytest.mark.parametrize("threads", [1, 2])
def test_a_node_launches_its_planned_product_again_for_operands_of_the_same_layout(
        monkeypatch, threads) -> None:
    """The second call of an epilogue node with operands laid out as before runs the launch
    planned at the first (no planning: run_after_product is not called), with the same bits;
    a strided loop input, or operands of another layout, take the planning path again."""
    from pullback.compiler._fused import FusedKernel

    ran = []
    real = FusedKernel.run_after_product

    def spy(self, *args):
        ran.append(True)
        return real(self, *args)

    monkeypatch.setattr(FusedKernel, "run_after_product", spy)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((301, 300)).astype(np.float32)
    w = rng.standard_normal((300, 512)).astype(np.float32)
    h = rng.standard_normal((301, 512)).astype(np.float32)
    before = pb.get_num_threads()
    pb.set_num_threads(threads)
    try:
        fused, unfused = _epilogue_programs(lambda a, b, c: (a @ b) * c + c, x, w, h)
        want = unfused([x, w, h])[0]
        for i in range(3):  # planned at the first call, launched at the next two
            ran.clear()
            np.testing.assert_array_equal(fused.run([x, w, h])[0], want)
            assert ran == ([True] if i == 0 else [])
        h_strided = np.asfortranarray(h)  # the loop's input: the launch declines, planning copies
        ran.clear()
        np.testing.assert_array_equal(fused.run([x, w, h_strided])[0], want)
        assert ran == [True]
        x_wide = np.zeros((301, 600), np.float32)
        x_wide[:, ::2] = x  # operands of another layout: planned (and copied) again
        x_strided = x_wide[:, ::2]
        ran.clear()
        np.testing.assert_array_equal(fused.run([x_strided, w, h])[0], want)
        ran.clear()
        np.testing.assert_array_equal(fused.run([x, w, h])[0], want)
        assert ran == [True]  # back to the first layout: planned once more
    finally:
        pb.set_num_threads(before)
