"""Every registered pass, alone and in the default pipeline, on every graph of the battery: the
optimized graph gives bit-identical results (NaN, infinities and signed zeros included)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn.functional as F
from compiler_battery import placeholder_values
from pass_battery import CASES, assert_close, assert_identical, traced
from pullback.compiler import optimize, run_graph, trace
from pullback.compiler.passes import DEFAULT_PIPELINE
from pullback.compiler.passes._registry import PASSES
from pullback.compiler.passes.algebraic import REWRITES, rewrite_table
from pullback.plugins import graph_passes

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN and inf inputs

EXACT_PASSES = [name for name in DEFAULT_PIPELINE if PASSES[name].exact]


def test_the_compilers_passes_are_registered_through_the_plugin_hook():
    assert set(PASSES) <= set(graph_passes())
    assert set(DEFAULT_PIPELINE) <= set(PASSES)


def _check(name: str, pipeline: list[str], exact: bool = True) -> dict:
    graph, inputs = traced(name)
    values = placeholder_values(graph, inputs)
    optimized, report = optimize(graph, pipeline)
    before, after = run_graph(graph, *values), run_graph(optimized, *values)
    assert len(before) == len(after)
    for i, (a, b) in enumerate(zip(before, after)):
        where = f"{name}: result {i} after {pipeline}"
        if exact:
            assert_identical(a, b, where)
        else:
            assert_close(a, b, where)
    assert len(optimized.nodes) <= len(graph.nodes)
    return {"before": len(graph.nodes), "after": len(optimized.nodes), "report": report}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("pass_name", sorted(PASSES))
def test_each_registered_pass_alone_keeps_the_results(pass_name, case):
    """Bit-identical for the exact passes; within the fused loops' tolerance for the others."""
    _check(case, [pass_name], exact=PASSES[pass_name].exact)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_exact_pipeline_keeps_results_bit_identical(case):
    counts = _check(case, EXACT_PASSES)
    assert [r["pass"] for r in counts["report"]] == EXACT_PASSES
    assert counts["report"][0]["nodes_before"] == counts["before"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_default_pipeline_keeps_the_results(case):
    counts = _check(case, list(DEFAULT_PIPELINE), exact=False)
    assert counts["after"] <= counts["before"]


def _ops_after(name, pipeline):
    graph, _ = traced(name)
    return [n.op for n in optimize(graph, pipeline)[0].nodes], graph


def test_algebraic_removes_exact_identities_and_keeps_inexact_ones():
    ops, graph = _ops_after("rewrites", ["algebraic", "dce"])
    before = [n.op for n in graph.nodes]
    assert before.count("neg") == 2 and "neg" not in ops
    assert "permute" not in ops and ops.count("reshape") <= 1 and "broadcast_to" not in ops
    # x + 0.0, x * 0.0, x - x and x / x are not exact for floats: all still there
    assert ops.count("add") == before.count("add") - 1  # only x + (-0.0) went
    assert ops.count("sub") == before.count("sub") - 1  # x - 0.0 went, x - x stayed
    assert ops.count("div") == before.count("div") - 1  # x / 1 went, x / x stayed


def test_algebraic_uses_the_integer_only_rewrites_on_integers():
    ops, graph = _ops_after("integer_rewrites", ["algebraic", "dce"])
    assert len(ops) < len(graph.nodes)
    assert "sub" not in ops and "mul" not in ops


def test_cse_keeps_one_of_each_computation():
    ops, graph = _ops_after("duplicates", ["cse"])
    assert [n.op for n in graph.nodes].count("exp") == 2 and ops.count("exp") == 1
    assert ops.count("matmul") == 1


def test_cse_tells_signed_zeros_and_number_types_apart():
    def f(x):
        return (x + 0.0) * (x + (-0.0)) + (x * 1) * (x * 1.0)

    with pb.no_grad():
        graph = trace(f, pb.randn(3))
    ops = [n.op for n in optimize(graph, ["cse"])[0].nodes]
    assert ops.count("add") == 3 and ops.count("mul") == 4  # nothing merged


def test_constant_folding_computes_what_depends_on_constants_only():
    ops, graph = _ops_after("constants", ["constant_fold", "dce"])
    assert ops == ["mul", "add"]
    assert len(graph.nodes) > len(ops)


def test_dce_drops_unused_work():
    ops, _ = _ops_after("dead", ["dce"])
    assert ops == ["add"]


def test_runtime_scalars_are_not_folded():
    import pullback.optim as optim
    from compiler_battery import mlp, mlp_batch, training_step

    model = mlp()
    graph = trace(training_step(model, optim.Adam(model.parameters())), *mlp_batch())
    optimized, _ = optimize(graph, EXACT_PASSES)
    scalars = {ph.value for ph in graph.placeholders if ph.kind == "scalar"}
    read = {v for n in optimized.nodes for v in n.input_values()}
    assert scalars and scalars <= read


def test_the_rewrite_table_lists_every_rewrite_with_its_condition():
    table = rewrite_table()
    for name, r in REWRITES.items():
        assert f"`{name}`" in table and r.condition in table


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_each_rewrite_names_its_ops_and_condition(name):
    r = REWRITES[name]
    assert r.ops and r.condition and r.pattern


def test_backward_graphs_shrink_under_the_pipeline():
    graph, _ = traced("gpt_backward")
    optimized, report = optimize(graph, EXACT_PASSES)
    assert len(optimized.nodes) < len(graph.nodes)
    assert all(r["nodes_after"] <= r["nodes_before"] for r in report)


def test_folded_constants_are_the_kernels_own_results():
    graph, inputs = traced("constants")
    optimized, _ = optimize(graph, ["constant_fold", "dce"])
    (scale,) = [v for n in optimized.nodes for v in n.input_values() if v in optimized.constants]
    np.testing.assert_array_equal(optimized.constants[scale],
                                  np.ones(4, np.float32) * 2.0 + np.arange(4, dtype=np.float32))


def test_slice_gradients_go_into_one_buffer():
    graph, _ = traced("gpt_backward")
    before = [n.op for n in graph.nodes].count("getitem_scatter")
    ops = [n.op for n in optimize(graph, ["assemble_slices", "dce"])[0].nodes]
    assert before == 6 and "getitem_scatter" not in ops  # q, k, v of two layers
    assert ops.count("compiler.scatter_slices") == 2


def test_attention_gradients_go_straight_into_the_packed_qkv_gradient():
    graph, inputs = traced("gpt_backward")
    values = placeholder_values(graph, inputs)
    pipeline = ["assemble_slices", "dce", "pack_attention_grads", "dce"]
    optimized, _ = optimize(graph, pipeline)
    ops = [n.op for n in optimized.nodes]
    assert ops.count("compiler.attention_backward_packed") == 2  # two layers
    assert "compiler.scatter_slices" not in ops
    assert "nn.scaled_dot_product_attention_backward" not in ops
    # a layer: 3 permutes, 3 reshapes and the backward fewer (the packed node replaces the sum)
    assert len(optimized.nodes) == len(optimize(graph, pipeline[:2])[0].nodes) - 2 * 7
    for i, (a, b) in enumerate(zip(run_graph(graph, *values), run_graph(optimized, *values))):
        assert_identical(a, b, f"result {i}")


def test_attention_gradients_read_elsewhere_are_not_packed():
    """A head gradient that is also returned (read twice) keeps the unpacked nodes."""
    qkv = pb.randn(2, 8, 24, requires_grad=True)

    def f(qkv):
        q, k, v = (t.reshape(2, 8, 2, 4).transpose(1, 2) for t in qkv.split(8, axis=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y.transpose(1, 2).reshape(2, 8, 8).sum().backward()
        return qkv.grad

    graph = trace(f, qkv)
    packed = optimize(graph, ["assemble_slices", "dce", "pack_attention_grads", "dce"])[0]
    assert "compiler.attention_backward_packed" in [n.op for n in packed.nodes]
    backward = next(n for n in graph.nodes if n.op == "nn.scaled_dot_product_attention_backward")
    graph.outputs = list(graph.outputs) + [backward.outputs[1]]  # gk read by the results too
    kept = optimize(graph, ["assemble_slices", "dce", "pack_attention_grads", "dce"])[0]
    assert "compiler.attention_backward_packed" not in [n.op for n in kept.nodes]
    assert "compiler.scatter_slices" in [n.op for n in kept.nodes]


def _kernels_built_again(request):
    """The compiler's ops build nn's kernels once, capturing nn's C entry points: build them
    again for this test (its patched entry point declines) and again after it."""
    from pullback.compiler._ops import _generic_kernel

    _generic_kernel.cache_clear()
    request.addfinalizer(_generic_kernel.cache_clear)


@pytest.mark.parametrize("native_kernel", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_packed_attention_gradient_is_the_assembled_one_bit_for_bit(native_kernel, dtype,
                                                                    monkeypatch, request):
    """The op writes what scatter_slices writes from the three head gradients (column blocks
    in any order, -0.0 as 0.0), from the C kernel and from nn's composition alike."""
    from pullback.nn._ops import _native_attention
    from pullback.registry import get_op

    if not native_kernel:
        monkeypatch.setattr(_native_attention, "attention_backward",
                            lambda *a, **k: NotImplemented)
        _kernels_built_again(request)
    rng = np.random.default_rng(3)
    q, k, v, g = (rng.standard_normal((2, 3, 11, 4)).astype(dtype) for _ in range(4))
    g[0, 0, 0] = -0.0
    _, (weights,) = get_op("nn.scaled_dot_product_attention").generic(np)(
        q, k, v, None, None, scale=0.5, causal=True)
    heads = get_op("nn.scaled_dot_product_attention_backward").generic(np)(
        g, q, k, v, weights, scale=0.5, causal=True)
    starts = (24, 0, 12)
    keys = tuple((slice(None), slice(None), slice(s, s + 12)) for s in starts)
    merged = [h.transpose(0, 2, 1, 3).reshape(2, 11, 12) for h in heads]
    want = get_op("compiler.scatter_slices").kernel_for("cpu")(*merged, keys=keys,
                                                                shape=(2, 11, 36))
    got = get_op("compiler.attention_backward_packed").kernel_for("cpu")(
        g, q, k, v, weights, scale=0.5, causal=True, starts=starts, shape=(2, 11, 36))
    assert_identical(got, want, "packed attention gradient")


@pytest.mark.parametrize("pipeline", [["layer_norm_backward_add"],
                                      ["fuse_elementwise", "dce", "layer_norm_backward_add"]],
                         ids=["plain adds", "fused adds"])
def test_residual_gradients_are_summed_inside_layer_norm_backward(pipeline):
    """Each pre-norm block's residual add of a norm's input gradient goes into the backward
    (two layers: two norms each, minus the first block's, whose gx meets the embedding's
    gradient); the results stay the same, bit for bit."""
    graph, inputs = traced("gpt_backward")
    values = placeholder_values(graph, inputs)
    optimized, _ = optimize(graph, pipeline)
    ops = [n.op for n in optimized.nodes]
    backwards = [n.op for n in graph.nodes].count("nn.layer_norm_backward")
    summed = ops.count("compiler.layer_norm_backward_add")
    assert summed >= 2 and ops.count("nn.layer_norm_backward") == backwards - summed
    assert len(optimized.nodes) == len(optimize(graph, pipeline[:-1])[0].nodes) - summed
    for i, (a, b) in enumerate(zip(run_graph(graph, *values), run_graph(optimized, *values))):
        assert_identical(a, b, f"result {i}")


def test_a_norm_gradient_read_elsewhere_keeps_its_add():
    """gx also returned (read twice): the backward and the add stay apart."""
    x = pb.randn(4, 6, requires_grad=True)
    w = pb.randn(6, requires_grad=True)

    def f(x, w, returned):
        h = x * 2.0
        y = F.layer_norm(h, (6,), w) + h
        y.sum().backward()
        return x.grad

    graph = trace(lambda x, w: f(x, w, False), x, w)
    assert "compiler.layer_norm_backward_add" in [
        n.op for n in optimize(graph, ["layer_norm_backward_add"])[0].nodes]
    backward = next(n for n in graph.nodes if n.op == "nn.layer_norm_backward")
    graph.outputs = list(graph.outputs) + [backward.outputs[0]]
    kept = optimize(graph, ["layer_norm_backward_add"])[0]
    assert "compiler.layer_norm_backward_add" not in [n.op for n in kept.nodes]


@pytest.mark.parametrize("native_kernel", [True, False])
def test_layer_norm_backward_add_is_the_sum_of_the_two_ops(native_kernel, monkeypatch, request):
    """The op gives the add of the backward's gx, from the C kernel and nn's composition."""
    from pullback.nn._ops import _native
    from pullback.registry import get_op

    if not native_kernel:
        monkeypatch.setattr(_native, "layer_norm_backward", lambda *a, **k: NotImplemented)
        _kernels_built_again(request)
    rng = np.random.default_rng(4)
    g, x, residual = (rng.standard_normal((64, 48)).astype(np.float32) for _ in range(3))
    w = rng.standard_normal(48).astype(np.float32)
    _, (mean, rstd) = get_op("nn.layer_norm").generic(np)(x, w, None, normalized_ndim=1,
                                                          eps=1e-5)
    gx, gw, gb = get_op("nn.layer_norm_backward").generic(np)(g, x, w, mean, rstd,
                                                             normalized_ndim=1)
    got = get_op("compiler.layer_norm_backward_add").kernel_for("cpu")(
        g, x, w, mean, rstd, residual, normalized_ndim=1)
    for a, b, what in zip(got, (residual + gx, gw, gb), ("gx", "gw", "gb")):
        assert_identical(a, b, what)


def test_slice_assembly_keeps_signed_zeros_as_the_sums_do():
    x = pb.tensor(np.array([[-0.0, 1.0, -0.0, 2.0]]), requires_grad=True)
    weights = pb.tensor(np.array([[-1.0, 1.0, 0.5, -0.0]]))  # a -0.0 gradient in the 2nd slice

    def f(x):
        a, b = x[:, :2], x[:, 2:]
        (pb.cat([a, b], axis=1) * weights).sum().backward()
        return x.grad

    graph = trace(f, x)
    values = placeholder_values(graph, [x])
    optimized, _ = optimize(graph, ["assemble_slices", "dce"])
    assert "compiler.scatter_slices" in [n.op for n in optimized.nodes]
    for a, b in zip(run_graph(graph, *values), run_graph(optimized, *values)):
        assert_identical(a, b, "signed zeros")


def test_overlapping_slices_are_left_as_sums():
    x = pb.randn(2, 4, requires_grad=True)

    def f(x):
        (x[:, :3] * 2.0 + x[:, 1:] * 3.0).sum().backward()
        return x.grad

    graph = trace(f, x)
    ops = [n.op for n in optimize(graph, ["assemble_slices", "dce"])[0].nodes]
    assert "compiler.scatter_slices" not in ops and ops.count("getitem_scatter") == 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("rows", [3, 4097])  # 4,097 rows of 40 are split over the threads
def test_slice_assembly_in_c_matches_the_numpy_kernel(dtype, rows):
    """The C kernel for slices of the last axis writes what the NumPy kernel writes, signed
    zeros included, for pieces in any order; other cuts keep the NumPy kernel."""
    from pullback.compiler import _native_slices
    from pullback.registry import get_op

    rng = np.random.default_rng(rows)
    widths, shape = (16, 4, 20), (rows, 40)
    grads = tuple(rng.standard_normal((rows, w)).astype(dtype) for w in widths)
    grads[1][0, 0] = -0.0
    starts = (24, 0, 4)  # the pieces are not in column order
    keys = tuple((slice(None), slice(s, s + w)) for s, w in zip(starts, widths))
    got = _native_slices.scatter_columns(grads, keys, shape)
    assert got is not NotImplemented
    expected = np.empty(shape, dtype)
    for g, key in zip(grads, keys):
        np.add(g, 0.0, out=expected[key])
    assert_identical(got, expected, "C slice assembly")
    assert not np.signbit(got[0, 0])  # the -0.0 came back as 0.0, as from the sums
    by_op = get_op("compiler.scatter_slices").kernel_for("cpu")(*grads, keys=keys, shape=shape)
    assert_identical(by_op, expected, "the op's kernel")
    # slices of another axis, a step, or a gap: not the C kernel's
    for other_keys, other_shape in [
            (((slice(0, 1), slice(None)), (slice(1, 3), slice(None))), (3, 5)),
            (((slice(None), slice(0, 4, 2)), (slice(None), slice(1, 4, 2))), (rows, 4)),
            (((slice(None), slice(0, 2)), (slice(None), slice(3, 4))), (rows, 4))]:
        pieces = tuple(np.ones(np.empty(other_shape)[k].shape, dtype) for k in other_keys)
        assert _native_slices.scatter_columns(pieces, other_keys, other_shape) is NotImplemented
