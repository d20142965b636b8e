"""GraphModule: what it copies from the root, state_dict round trips, deep copies, recompiling
after edits, tracebacks through the generated code, and pullback.compiler compiling it."""

from __future__ import annotations

import copy
import operator
import traceback

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.fx import Graph, GraphModule, symbolic_trace


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 8), nn.Tanh())
        self.head = nn.Linear(8, 3)
        self.unused = nn.Linear(3, 3)
        self.register_buffer("offset", pullback.zeros(3))
        self.register_buffer("scratch", pullback.ones(3), persistent=False)

    def forward(self, x):
        return self.head(self.encoder(x)) + self.offset * self.scratch


def data() -> pullback.Tensor:
    return pullback.tensor(np.random.default_rng(0).standard_normal((5, 4)),
                           dtype=pullback.float32)


def test_the_used_objects_are_the_roots_own_and_the_unused_are_left_out() -> None:
    model = Net()
    gm = symbolic_trace(model)
    # the traced-through Sequential is rebuilt as a plain Module holding the same layers
    assert gm.head is model.head and gm.get_submodule("encoder.0") is model.encoder[0]
    assert not hasattr(gm, "unused")
    assert list(gm.state_dict()) == [k for k in model.state_dict() if not k.startswith("unused")]
    assert "scratch" in dict(gm.named_buffers())  # kept, and still not persistent
    assert gm.training and not symbolic_trace(Net().eval()).training


def test_state_dict_round_trip() -> None:
    model, other = Net(), Net()
    gm = symbolic_trace(model)
    result = gm.load_state_dict({k: v for k, v in other.state_dict().items()
                                 if not k.startswith("unused")})
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert np.array_equal(gm(data()).detach().numpy(), other(data()).detach().numpy())
    fresh = symbolic_trace(Net())
    fresh.load_state_dict(gm.state_dict())
    assert np.array_equal(fresh(data()).detach().numpy(), gm(data()).detach().numpy())


def test_gradients_reach_the_roots_parameters() -> None:
    model = Net()
    gm = symbolic_trace(model)
    gm(data()).sum().backward()
    expected = {n: p.grad.numpy().copy() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    model(data()).sum().backward()
    for name, grad in expected.items():
        assert np.array_equal(grad, model.get_parameter(name).grad.numpy()), name


def test_deepcopy_is_independent() -> None:
    gm = symbolic_trace(Net())
    twin = copy.deepcopy(gm)
    assert type(twin) is not type(gm) and type(twin).__name__ == "Net"
    assert twin.head.weight is not gm.head.weight and twin.graph is not gm.graph
    assert np.array_equal(twin(data()).detach().numpy(), gm(data()).detach().numpy())
    output = next(n for n in twin.graph.nodes if n.op == "output")
    with twin.graph.inserting_before(output):
        doubled = twin.graph.call_function(operator.mul, (output.args[0], 2))
    output.args = (doubled,)
    twin.recompile()
    assert "mul_1 = add * 2" in twin.code and "mul_1" not in gm.code
    assert np.allclose(twin(data()).detach().numpy(), 2 * gm(data()).detach().numpy())


def test_recompile_after_an_edit_changes_forward_of_this_module_only() -> None:
    model = Net()
    first, second = symbolic_trace(model), symbolic_trace(model)
    first.add_submodule("act", nn.ReLU())
    for node in first.graph.nodes:
        if node.op == "call_module" and node.target == "encoder.1":
            node.target = "act"  # the tanh becomes a relu
    first.graph.lint()
    first.recompile()
    assert "encoder_1 = self.act(encoder_0)" in first.code
    assert 'getattr(self.encoder, "1")' in second.code
    hidden = pullback.relu(model.encoder[0](data()))
    assert np.array_equal(first(data()).detach().numpy(),
                          (model.head(hidden) + model.offset).detach().numpy())
    assert np.array_equal(second(data()).detach().numpy(), model(data()).detach().numpy())


def test_a_dict_root_and_a_wrong_root() -> None:
    graph = Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_module("layers.0", (graph.get_attr("weight"),)))
    linear = nn.Linear(2, 2)
    weight = pullback.ones(3, 2)
    gm = GraphModule({"layers.0": linear, "weight": weight}, graph)
    assert gm.get_submodule("layers.0") is linear and gm.weight is weight
    assert gm(None).shape == (3, 2) and x.users == {}
    with pytest.raises(RuntimeError, match="'missing'"):
        bad = Graph()
        bad.output(bad.get_attr("missing"))
        GraphModule({}, bad)
    with pytest.raises(RuntimeError, match="Unsupported type int"):
        GraphModule(3, Graph())  # type: ignore[arg-type]


def test_a_traceback_shows_the_generated_line() -> None:
    gm = symbolic_trace(lambda x, y: pullback.matmul(x, y))
    with pytest.raises(Exception) as caught:
        gm(pullback.ones(2, 3), pullback.ones(2, 3))
    text = "".join(traceback.format_exception(caught.value))
    assert "matmul = pullback.matmul(x, y);  x = y = None" in text


def test_print_readable_and_str() -> None:
    gm = symbolic_trace(Net())
    text = gm.print_readable(print_output=False)
    assert text.startswith("class Net(pullback.nn.Module):\n    def forward(self, x):")
    assert str(gm).startswith("Net(") and gm.code in str(gm)


def test_submodule_management() -> None:
    gm = symbolic_trace(Net())
    assert gm.add_submodule("extra.deep", nn.ReLU())
    assert isinstance(gm.get_submodule("extra.deep"), nn.ReLU)
    assert not gm.delete_submodule("extra.nothing")
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "extra") and hasattr(gm, "head") and hasattr(gm.encoder, "0")


def test_pullback_compiler_compiles_a_graph_module() -> None:
    compiler = pytest.importorskip("pullback.compiler", reason="needs pullback-compiler")
    model = Net()
    gm = symbolic_trace(model)
    x = data()
    compiled_gm, compiled_model = compiler.compile(gm, fullgraph=True), \
        compiler.compile(model, fullgraph=True)
    for _ in range(2):  # the first call traces, the second replays
        ours, theirs = compiled_gm(x), compiled_model(x)
    assert compiled_gm.traces == 1
    assert np.array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert np.allclose(ours.detach().numpy(), model(x).detach().numpy(), atol=1e-6)
    # the compiler sees the same ops in both
    assert str(compiler.trace(gm, x)).replace("graph Net", "graph M") == \
        str(compiler.trace(model, x)).replace("graph Net", "graph M")
