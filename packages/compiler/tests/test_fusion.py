"""Elementwise fusion: generated C loops agree with the unfused graph (bit for bit where only
arithmetic is involved, within the stated tolerance otherwise), the NumPy fallback is the
unfused computation exactly, and the loops are built once and cached on disk."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from compiler_battery import placeholder_values
from pass_battery import CASES, assert_close, assert_identical, special_floats, traced
from pullback import native
from pullback.compiler import optimize, run_graph, trace
from pullback.compiler._c_rules import C_SCALAR_RULES
from pullback.compiler.passes.fusion import FUSED_OP

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf inputs

FUSION = ["fuse_elementwise", "dce"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_graphs_agree_with_the_unfused_ones(case):
    graph, inputs = traced(case)
    values = placeholder_values(graph, inputs)
    fused, report = optimize(graph, FUSION)
    for i, (a, b) in enumerate(zip(run_graph(graph, *values), run_graph(fused, *values))):
        assert_close(a, b, f"{case}: result {i}")


def _graph(fn, *inputs):
    with pb.no_grad():
        return trace(fn, *inputs)


def _fused_nodes(graph):
    return [n for n in optimize(graph, FUSION)[0].nodes if n.op == FUSED_OP]


def test_an_arithmetic_chain_is_one_loop_and_bit_identical():
    x, w = special_floats((64, 33)), special_floats((64, 33), seed=2)
    graph = _graph(lambda x, w: ((x * w + 1.5) / (w - x)) * 0.25 - pb.sqrt(pb.abs(x)), x, w)
    fused = optimize(graph, FUSION)[0]
    assert [n.op for n in fused.nodes] == [FUSED_OP]
    (a,), (b,) = run_graph(graph, x.array, w.array), run_graph(fused, x.array, w.array)
    assert_identical(a, b, "arithmetic chain")


def test_broadcast_rows_columns_and_single_elements_are_read_in_place():
    x = pb.randn(8, 5, 7)
    bias, per_row, one = pb.randn(7), pb.randn(8, 5, 1), pb.randn(1)
    graph = _graph(lambda x, b, r, o: pb.tanh(x + b) * r - o, x, bias, per_row, one)
    (node,) = _fused_nodes(graph)
    kernel = node.attrs["kernel"]
    assert sorted(kernel.input_kinds) == ["col", "full", "one", "row"]
    args = [t.array for t in (x, bias, per_row, one)]
    # tanh's ulp of difference, scaled by r, is absolute where "- o" cancels: compare at the
    # terms' scale (O(1) here), not relative to a result that may be near zero
    np.testing.assert_allclose(run_graph(optimize(graph, FUSION)[0], *args)[0],
                               run_graph(graph, *args)[0], rtol=2e-6, atol=2e-6)


def test_strided_inputs_are_read_from_copies_that_outlive_the_loop():
    """A column sliced out of a wider array (cross-entropy's saved (max, log-sum-exp) pairs)
    is not contiguous: the loop reads a contiguous copy, which must stay alive while it runs
    (a copy freed as soon as its address was taken gave garbage)."""
    x, stats, y = pb.randn(64, 33), pb.randn(64, 2), pb.randn(64, 33)
    graph = _graph(lambda x, s, y: pb.exp(x - s[:, :1] - s[:, 1:]) - y, x, stats, y)
    args = [t.array for t in (x, stats, y)]
    fused = optimize(graph, FUSION)[0]
    assert FUSED_OP in [n.op for n in fused.nodes]
    for _ in range(3):  # each call allocates, so a dangling copy would be overwritten
        np.testing.assert_allclose(run_graph(fused, *args)[0], run_graph(graph, *args)[0],
                                   rtol=1e-6, atol=1e-6)


def test_a_trailing_sum_folds_into_the_loop():
    x, w = pb.randn(16, 40, dtype="float64"), pb.randn(40, dtype="float64")
    graph = _graph(lambda x, w: pb.exp(x * w).sum(axis=-1, keepdims=True), x, w)
    (node,) = _fused_nodes(graph)
    assert node.attrs["kernel"].reduce_from == 1
    fused = optimize(graph, FUSION)[0]
    assert_close(run_graph(graph, x.array, w.array)[0], run_graph(fused, x.array, w.array)[0], "sum")


def test_a_sum_whose_chain_is_read_elsewhere_is_not_folded():
    x = pb.randn(4, 6)
    graph = _graph(lambda x: (pb.exp(x) * 2.0, (pb.exp(x) * 2.0).sum()), x)
    fused = optimize(graph, ["cse"] + FUSION)[0]
    assert "sum" in [n.op for n in fused.nodes]


def test_ops_without_a_c_rule_split_the_chains():
    x = pb.randn(6, 6)
    graph = _graph(lambda x: pb.exp(x @ pb.tanh(x)) + 1.0, x)
    ops = [n.op for n in optimize(graph, FUSION)[0].nodes]
    assert ops == ["tanh", "matmul", FUSED_OP]  # tanh alone stays; exp and + 1.0 fuse


def test_a_backward_loop_recomputes_its_forward_instead_of_reading_every_value():
    x = pb.randn(8, dtype="float64", requires_grad=True)

    def f(x):
        y = x
        for _ in range(20):
            y = pb.tanh(y * 1.1 + 0.1)
        y.sum().backward()
        return y

    graph = trace(f, x)
    fused = optimize(graph, FUSION)[0]
    loops = [n for n in fused.nodes if n.op == FUSED_OP]
    assert max(len(n.inputs) for n in loops) <= 3  # not the 20 activations
    for i, (a, b) in enumerate(zip(run_graph(graph, x.array), run_graph(fused, x.array))):
        assert_close(a, b, f"result {i}")


def test_the_numpy_fallback_is_the_unfused_computation_exactly(monkeypatch):
    monkeypatch.setenv("PULLBACK_NATIVE", "0")
    graph, inputs = traced("mlp_backward")
    values = placeholder_values(graph, inputs)
    fused = optimize(graph, FUSION)[0]
    assert any(n.op == FUSED_OP for n in fused.nodes)
    for i, (a, b) in enumerate(zip(run_graph(graph, *values), run_graph(fused, *values))):
        assert_identical(a, b, f"fallback result {i}")


def test_loops_are_built_once_and_cached_on_disk():
    x = pb.randn(50)
    graph = _graph(lambda x: pb.sigmoid(x) * x - 3.0, x)
    (node,) = _fused_nodes(graph)
    kernel = node.attrs["kernel"]
    kernel(x.array)
    if kernel._function is None:
        pytest.skip(f"no C compiler here: {native.status()}")
    built = [s for name, s in native.status().items() if name.startswith("fused_")]
    assert built and all(s.startswith("built ") for s in built)
    assert kernel._library_function() is kernel._function  # not rebuilt


@pytest.mark.parametrize("op", sorted(C_SCALAR_RULES))
def test_every_c_rule_matches_its_ops_kernel(op):
    """Each op's C expression, alone in a loop, against the op's own kernel on special values."""
    from pullback.registry import get_op

    x, y = special_floats((4, 8), "float64"), special_floats((4, 8), "float64", seed=3)
    attrs = {"clamp": {"min": -0.5, "max": 0.75}, "cast": {"dtype": np.dtype("float32")}}.get(
        op, {})
    n = {"where": 3, "tanh_backward": 2, "sigmoid_backward": 2, "relu_backward": 2,
         "gelu_backward": 2}.get(op, None)
    arity = n or (2 if op in ("add", "sub", "mul", "div", "maximum", "minimum", "greater",
                              "greater_equal", "less", "less_equal", "equal", "not_equal", "pow",
                              "logical_and", "logical_or", "logical_xor")
                  else 1)
    args = [x, y][:arity] if arity < 3 else [x > 0, x, y]

    def f(*a):
        return pb.dispatch.apply(get_op(op), *a, **attrs) * 1.0

    graph = _graph(f, *args)
    arrays = [a.array for a in args]
    fused = optimize(graph, FUSION)[0]
    assert [n.op for n in fused.nodes] == [FUSED_OP]
    assert_close(run_graph(graph, *arrays)[0], run_graph(fused, *arrays)[0], op)


FULL = ["fuse_elementwise", "dce", "matmul_epilogue", "write_in_place"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_epilogues_and_in_place_writes_keep_the_fused_results(case):
    graph, inputs = traced(case)
    values = placeholder_values(graph, inputs)
    fused = optimize(graph, FUSION)[0]
    full = optimize(graph, FULL)[0]
    copies = [np.copy(v) if isinstance(v, np.ndarray) else v for v in values]
    # an epilogue turns a lone activation into a C loop: the fused tolerance applies
    for i, (a, b) in enumerate(zip(run_graph(fused, *values), run_graph(full, *copies))):
        assert_close(a, b, f"{case}: result {i}")


def test_linear_bias_and_activation_become_one_epilogue_writing_into_the_product():
    import pullback.nn as nn

    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 3), nn.Tanh())
    x = pb.randn(9, 6)
    graph = _graph(model, x)
    full = optimize(graph, FULL)[0]
    assert [n.op for n in full.nodes] == ["compiler.matmul_epilogue"] * 3
    for node in full.nodes:
        kernel = node.attrs["kernel"]
        assert node.inputs[2] is None and kernel.ops[0].op == "add"  # the bias is in the loop
        assert kernel.out_into == {0: node.attrs["at"]}
    values = placeholder_values(graph, [x])
    assert_close(run_graph(graph, *values)[0], run_graph(full, *values)[0], "epilogue")


def test_a_product_read_by_backward_keeps_its_own_buffer():
    import pullback.nn as nn
    from compiler_battery import classification_loss

    model = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))
    x, y = pb.randn(5, 6), pb.tensor(np.array([0, 1, 2, 1, 0]))

    def f(x, y):
        loss = classification_loss(model, x, y)
        loss.backward()
        return loss

    ops = [n.op for n in optimize(trace(f, x, y), FULL)[0].nodes]
    # the forward product stays (GELU's backward reads it); the backward's product feeding
    # gelu_backward alone does become an epilogue
    assert ops[:2] == ["nn.linear", "gelu"]
    assert "compiler.matmul_epilogue" in ops


def test_optimizer_updates_are_written_into_the_parameters_and_states():
    import pullback.optim as optim
    from compiler_battery import mlp, mlp_batch, training_step

    model = mlp()
    graph = trace(training_step(model, optim.AdamW(model.parameters())), *mlp_batch())
    full = optimize(graph)[0]
    written = sum(len(n.attrs["kernel"].out_into) for n in full.nodes if n.op == FUSED_OP)
    assert written == 3 * len(list(model.parameters()))  # p, exp_avg, exp_avg_sq


def test_tanh_and_exp_float32_loops_stay_within_three_ulp_of_numpy_over_their_range():
    x = pb.tensor(np.concatenate([np.linspace(-30, 30, 20001), [0.0, -0.0, 1e-30, -1e-30,
                                                               np.inf, -np.inf, np.nan]])
                  .astype(np.float32))
    graph = _graph(lambda x: (pb.tanh(x) * 1.0, pb.exp(x * 0.5) * 1.0), x)
    fused = optimize(graph, FUSION)[0]
    assert [n.op for n in fused.nodes] == [FUSED_OP, FUSED_OP]
    for a, b in zip(run_graph(graph, x.array), run_graph(fused, x.array)):
        np.testing.assert_allclose(b, a, rtol=4e-7, atol=1e-38, equal_nan=True)
        np.testing.assert_array_equal(np.signbit(a[np.isfinite(a)] == 0), np.signbit(
            b[np.isfinite(a)] == 0))


def test_one_large_arithmetic_op_alone_becomes_a_loop_split_over_the_threads():
    """A lone add of 2^15 elements or more (a residual gradient's sum) runs as a C loop, with
    NumPy's bits; a smaller one, and a lone transcendental op, stay NumPy's."""
    rng = np.random.default_rng(11)
    rows = native.MIN_POOL_ELEMENTS // 64
    big = [pb.tensor(rng.standard_normal((rows, 64)).astype(np.float32)) for _ in range(2)]
    small = [pb.tensor(rng.standard_normal((rows // 4, 64)).astype(np.float32)) for _ in range(2)]
    for args, fn, fused in [(big, lambda a, b: a + b, True), (small, lambda a, b: a + b, False),
                            (big, lambda a, b: pb.exp(a), False)]:
        graph = trace(fn, *args)
        optimized, _ = optimize(graph, ["fuse_elementwise"])
        assert ([n.op for n in optimized.nodes] == [FUSED_OP]) is fused
        values = placeholder_values(graph, args)
        assert_identical(run_graph(optimized, *values)[0], run_graph(graph, *values)[0],
                         "a lone op")
