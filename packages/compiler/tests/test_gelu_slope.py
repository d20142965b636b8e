"""gelu_slope_in_forward: GELU's forward loop also writes gelu'(x), and GELU's backward becomes
a product by it. The results are the pipeline's without the pass, bit for bit in float32 where
both compute in C (the slope is the very expression gelu_backward's C kernel multiplies by;
core runs arrays under ``native.MIN_NATIVE_ELEMENTS`` through NumPy, within the fused
tolerance of C)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
import pullback.nn.functional as F
from compiler_battery import classification_loss, placeholder_values
from pass_battery import assert_close, assert_identical
from pullback.compiler import optimize, run_graph, trace
from pullback.compiler.passes.fusion import FUSED_OP

WITHOUT = ["fuse_elementwise", "dce", "matmul_epilogue", "write_in_place"]
WITH = ["fuse_elementwise", "dce", "gelu_slope_in_forward", "matmul_epilogue", "write_in_place"]


def _product_operands(seed: int, rows: int, inner: int, cols: int):
    """``(rng, x, w)``: float32 operands of ``x @ w``, ``w`` a parameter; ``rng`` draws on."""
    rng = np.random.default_rng(seed)
    x = pb.tensor(rng.standard_normal((rows, inner)).astype(np.float32))
    w = pb.tensor(rng.standard_normal((inner, cols)).astype(np.float32), requires_grad=True)
    return rng, x, w


def _ops(graph) -> list[str]:
    """Every op of the graph, those inside fused loops and epilogues included."""
    return [op for node in graph.nodes for op in [node.op, *_loop_ops(node)]]


def _loop_ops(node) -> list[str]:
    """The ops of a fused loop's or an epilogue's kernel (none for other nodes)."""
    kernel = node.attrs.get("kernel")
    return [op.op for op in kernel.ops] if hasattr(kernel, "ops") else []


def _ops_of(node) -> list[str]:
    """The ops a node runs (a loop's, or its own)."""
    return _loop_ops(node) or [node.op]


def _mlp_step_graph(dtype: str):
    pb.manual_seed(0)
    # 64 x 32 activations: core's GELU kernels run in C from native.MIN_NATIVE_ELEMENTS on
    model = nn.Sequential(nn.Linear(6, 32), nn.GELU(), nn.Linear(32, 3)).to(dtype)
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.standard_normal((64, 6)).astype(dtype))
    y = pb.tensor(rng.integers(0, 3, 64))

    def f(x, y):
        loss = classification_loss(model, x, y)
        loss.backward()
        return loss

    graph = trace(f, x, y)
    return graph, placeholder_values(graph, [x, y])


def _compare(graph, values, exact: bool) -> None:
    before = run_graph(optimize(graph, WITHOUT)[0], *[np.copy(v) for v in values])
    after = run_graph(optimize(graph, WITH)[0], *[np.copy(v) for v in values])
    assert len(before) == len(after)
    for i, (a, b) in enumerate(zip(before, after)):
        (assert_identical if exact else assert_close)(a, b, f"result {i}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gelu_backward_becomes_a_product_by_the_slope_its_forward_wrote(dtype):
    graph, values = _mlp_step_graph(dtype)
    assert "gelu_backward" in _ops(graph)
    optimized = optimize(graph, WITH)[0]
    ops = _ops(optimized)
    assert "gelu_backward" not in ops and ops.count("compiler.gelu_slope") == 1
    forward = next(n for n in optimized.nodes if "compiler.gelu_slope" in _ops_of(n))
    # GELU and its slope run in the forward product's epilogue, the product read by it alone
    assert forward.op == "compiler.matmul_epilogue" and forward.attrs["product"] == "nn.linear"
    assert [op.op for op in forward.attrs["kernel"].ops][-2:] == ["gelu", "compiler.gelu_slope"]
    slope = forward.outputs[-1]
    readers = [n for n in optimized.nodes if slope in tuple(n.input_values())]
    assert len(readers) == 1 and "mul" in _ops_of(readers[0])
    # float64 GELU computes with libm's erf in a C loop and SciPy's in NumPy: the fused tolerance
    _compare(graph, values, exact=dtype == "float32")


def test_fused_forward_and_backward_loops_take_the_slope_too():
    """GELU inside a longer forward loop, gelu_backward inside a longer backward loop."""
    rng, x, w = _product_operands(1, 8, 5, 12)
    s = pb.tensor(rng.standard_normal((8, 12)).astype(np.float32))

    def f(x, w, s):
        y = F.gelu(x @ w) * s + 1.0
        y.sum().backward()
        return y, w.grad

    graph = trace(f, x, w, s)
    values = placeholder_values(graph, [x, w, s])
    fused = optimize(graph, ["fuse_elementwise", "dce"])[0]
    loops = [_ops_of(n) for n in fused.nodes if n.op == FUSED_OP]
    # gelu_backward(g * s, x): one loop; GELU and its scaling another
    assert any("gelu_backward" in ops and len(ops) > 1 for ops in loops)
    assert any("gelu" in ops and len(ops) > 1 for ops in loops)
    optimized = optimize(graph, WITH)[0]
    ops = _ops(optimized)
    assert "gelu_backward" not in ops and "compiler.gelu_slope" in ops
    _compare(graph, values, exact=True)


def test_a_backward_loop_that_recomputes_gelu_keeps_reading_the_activation():
    """Where fusion recomputes the forward inside the backward's loop (it reads GELU's output),
    that loop reads x for GELU itself: x stays, and so does gelu_backward."""
    _, x, w = _product_operands(1, 8, 5, 12)

    def f(x, w):
        y = F.gelu(x @ w)
        (y * y).sum().backward()
        return w.grad

    graph = trace(f, x, w)
    optimized = optimize(graph, WITH)[0]
    assert "compiler.gelu_slope" not in _ops(optimized)
    _compare(graph, placeholder_values(graph, [x, w]), exact=True)


def test_an_activation_read_elsewhere_keeps_gelu_backward():
    """x returned too, or read by another op: the backward still needs x, nothing is gained."""
    _, x, w = _product_operands(2, 4, 6, 6)

    def returned(x, w):
        h = x @ w
        F.gelu(h).sum().backward()
        return h, w.grad

    def read_twice(x, w):
        h = x @ w
        (F.gelu(h) + h.exp()).sum().backward()
        return w.grad

    for f in (returned, read_twice):
        graph = trace(f, x, w)
        optimized = optimize(graph, WITH)[0]
        ops = _ops(optimized)
        assert "gelu_backward" in ops and "compiler.gelu_slope" not in ops, f.__name__
        _compare(graph, placeholder_values(graph, [x, w]), exact=True)


def test_the_tanh_approximation_is_left_alone():
    _, x, w = _product_operands(3, 4, 6, 6)

    def f(x, w):
        F.gelu(x @ w, approximate="tanh").sum().backward()
        return w.grad

    graph = trace(f, x, w)
    assert "compiler.gelu_slope" not in _ops(optimize(graph, WITH)[0])


def test_the_slope_op_is_gelu_backwards_slope_in_numpy_and_in_c():
    from pullback.compiler._fused import FusedKernel, FusedOp
    from pullback.registry import get_op

    x = np.concatenate([np.linspace(-6, 6, 4001, dtype=np.float32),  # core's C kernel's size
                        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)])
    want = get_op("gelu_backward").kernel_for("cpu")(np.ones_like(x), x)
    numpy_slope = get_op("compiler.gelu_slope").generic(np)(x)
    f32 = np.dtype(np.float32)
    loop = FusedKernel([FusedOp("compiler.gelu_slope", (("in", 0),), {"approximate": "none"},
                                f32)], ["full"], [f32], x.shape, None, [0])
    assert_identical(loop(x), want, "C loop")
    assert_close(numpy_slope, want, "NumPy kernel")
