"""trace(): the graph of a forward, of a loss with its backward, and of a training step; the
round trip (running the graph gives the eager results exactly)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
from compiler_battery import (classification_loss, gpt, gpt_batch, loss_and_backward, mlp,
                              mlp_batch, placeholder_values)
from pullback.compiler import Graph, run_graph, to_dot, trace


def _forward_cases():
    yield "mlp-float32", mlp("float32"), mlp_batch("float32")[:1]
    yield "mlp-float64", mlp("float64"), mlp_batch("float64")[:1]
    yield "gpt", gpt(), gpt_batch()
    conv = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(12, 5), nn.LayerNorm(5), nn.Softmax(dim=-1))
    yield "cnn", conv, (pb.randn(2, 2, 4, 4),)


@pytest.mark.parametrize("name, model, inputs", list(_forward_cases()),
                         ids=[c[0] for c in _forward_cases()])
def test_running_a_traced_forward_reproduces_eager_exactly(name, model, inputs):
    with pb.no_grad():
        eager = model(*inputs)
        graph = trace(model, *inputs)
        replayed = run_graph(graph, *placeholder_values(graph, list(inputs)))
    eager = [t for t in (eager if isinstance(eager, tuple) else (eager,)) if t is not None]
    assert len(replayed) == len(eager)
    for a, b in zip(eager, replayed):
        np.testing.assert_array_equal(a.array, b)


def test_the_graph_names_parameters_and_types_every_value():
    model = mlp()
    x, _ = mlp_batch()
    with pb.no_grad():
        graph = trace(model, x)
    kinds = {ph.name: ph.kind for ph in graph.placeholders}
    assert kinds["x0"] == "input"
    assert kinds["0.weight"] == "param" and kinds["4.bias"] == "param"
    assert [n.op for n in graph.nodes] == ["nn.linear", "gelu", "nn.linear", "tanh", "nn.linear"]
    assert graph.nodes[0].outputs[0].shape == (10, 16)
    assert graph.nodes[0].outputs[0].dtype == np.float32
    text = str(graph)
    assert "%1: float32[16, 6] = param 0.weight" in text
    assert "= nn.linear(%0, %1, %2)" in text
    assert "return (%" in text


def test_dot_view_lists_every_node_and_placeholder():
    with pb.no_grad():
        graph = trace(lambda a, b: pb.exp(a) * b + 1.0, pb.randn(3), pb.randn(3))
    dot = to_dot(graph)
    assert dot.startswith("digraph") and dot.count("shape=box") == 3
    assert dot.count("input x") == 2


def test_a_loss_with_backward_traces_its_gradient_ops_and_grads_land_in_the_graph():
    model = mlp("float64")
    x, y = mlp_batch("float64")

    graph = trace(loss_and_backward(model), x, y)
    ops = [n.op for n in graph.nodes]
    assert "nn.cross_entropy" in ops and "gelu_backward" in ops and "tanh_backward" in ops
    # first-order backward: the fused forward's saved softmax is reused, no recomputation
    assert "nn.log_softmax" not in ops
    names = {ph.name for ph, v in graph.grads if v is not None}
    assert names == {name for name, _ in model.named_parameters()}
    eager_grads = {name: p.grad.array.copy() for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = None
    replayed = run_graph(graph, *placeholder_values(graph, [x, y]))
    grads = replayed[len([v for v in graph.outputs if v is not None]):]
    for (ph, _), g in zip(graph.grads, grads):
        np.testing.assert_array_equal(g, eager_grads[ph.name])


def test_a_training_step_records_the_optimizer_update_and_its_writes():
    import pullback.optim as optim

    model = mlp()
    opt = optim.AdamW(model.parameters(), lr=1e-2)
    x, y = mlp_batch()

    def step(x, y):
        loss = classification_loss(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    graph = trace(step, x, y)
    kinds = [ph.kind for ph in graph.placeholders]
    # the learning rate, bias corrections...: numbers computed at every call, not constants
    assert kinds.count("scalar") > 0
    assert kinds.count("array") == 2 * len(list(model.parameters()))  # exp_avg, exp_avg_sq
    written = {ph.name for ph, _ in graph.mutations}
    assert {name for name, _ in model.named_parameters()} <= written
    assert any(name.endswith("exp_avg_sq") for name in written)


def test_constants_made_inside_the_function_are_folded_into_the_graph():
    def f(x):
        return x * pb.arange(3, dtype="float32") + pb.ones(3)

    with pb.no_grad():
        graph = trace(f, pb.randn(3))
    assert [ph.kind for ph in graph.placeholders] == ["input"]
    assert len(graph.constants) == 2


def test_a_tensor_from_outside_is_read_afresh_not_baked_in():
    scale = pb.tensor([2.0, 3.0])

    def f(x):
        return x * scale

    with pb.no_grad():
        graph = trace(f, pb.ones(2))
    (captured,) = [ph for ph in graph.placeholders if ph.kind == "captured"]
    assert captured.source is scale


def test_verify_rejects_a_graph_out_of_ssa_order():
    with pb.no_grad():
        graph = trace(lambda a: pb.exp(a) + 1.0, pb.randn(2))
    broken = Graph(placeholders=graph.placeholders, nodes=list(reversed(graph.nodes)),
                   outputs=graph.outputs)
    with pytest.raises(ValueError, match="SSA order"):
        broken.verify()


def test_pullback_debug_shows_a_graph_as_text_and_dot(capsys):
    from pullback.debug import to_dot as debug_dot
    from pullback.debug import visualize

    with pb.no_grad():
        graph = trace(lambda a: pb.exp(a) * 2.0, pb.randn(3))
    assert visualize(graph) == str(graph) and "exp(%0)" in capsys.readouterr().out
    assert debug_dot(graph) == to_dot(graph)


class _RawSquare(pb.autograd.Function):
    """A Function that computes on raw arrays, out of the tracer's sight."""

    @staticmethod
    def forward(ctx, x):
        return pb.tensor(x.array ** 2)  # .array: no dispatch, no value read the tracer sees

    @staticmethod
    def backward(ctx, g):
        return g


class _OpsSquare(pb.autograd.Function):
    """A Function whose forward is made of pullback ops (recorded one by one)."""

    @staticmethod
    def forward(ctx, x):
        return x * x

    @staticmethod
    def backward(ctx, g):
        return g


def test_a_function_computing_on_raw_arrays_is_refused_not_frozen_into_the_graph():
    from pullback.compiler import DataDependentError, GraphBreakWarning, compile

    with pb.no_grad(), pytest.raises(DataDependentError, match="Function _RawSquare computes"):
        trace(lambda x: _RawSquare.apply(x) + 1.0, pb.ones(3))
    with pb.no_grad():
        graph = trace(lambda x: _OpsSquare.apply(x) + 1.0, pb.ones(3))
    assert [n.op for n in graph.nodes] == ["mul", "add"]
    compiled = compile(lambda x: _RawSquare.apply(x) + 1.0)
    with pytest.warns(GraphBreakWarning, match="_RawSquare"):
        compiled(pb.ones(3))
    np.testing.assert_array_equal(compiled(pb.full((3,), 2.0)).numpy(), [5.0, 5.0, 5.0])
