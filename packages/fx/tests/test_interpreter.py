"""Interpreter, Transformer and ShapeProp, next to torch.fx's on the same programs."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pytest
from fx_oracle import both, same_code

import pullback
from pullback import nn
from pullback.fx import Interpreter, Transformer, symbolic_trace
from pullback.fx.passes.shape_prop import ShapeProp, TensorMetadata


def model(t: Any) -> Any:
    class Model(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = t.nn.Conv2d(2, 4, 3, padding=1)
            self.fc = t.nn.Linear(4 * 5 * 5, 3)

        def forward(self, x):
            y = t.lib.relu(self.conv(x))
            return self.fc(y.flatten(1)), y.sum(dim=(2, 3))

    return Model()


def data(lib: Any) -> Any:
    return lib.tensor(np.random.default_rng(0).standard_normal((2, 2, 5, 5)), dtype=lib.float32)


def test_the_interpreter_runs_the_graph_as_the_module_does() -> None:
    gm = symbolic_trace(model(pullback_namespace()))
    expected = gm(data(pullback))
    interpreter = Interpreter(gm)
    actual = interpreter.run(data(pullback))
    for e, a in zip(expected, actual):
        assert np.array_equal(e.detach().numpy(), a.detach().numpy())
    assert list(interpreter.env) == [n for n in gm.graph.nodes if n.op == "output"]
    kept = Interpreter(gm, garbage_collect_values=False)
    kept.run(data(pullback))
    assert len(kept.env) == len(gm.graph.nodes)


def test_overriding_one_kind_of_node() -> None:
    class CountingInterpreter(Interpreter):
        def __init__(self, module):
            super().__init__(module)
            self.calls: list[str] = []

        def call_module(self, target, args, kwargs):
            self.calls.append(target)
            return super().call_module(target, args, kwargs)

        def call_function(self, target, args, kwargs):
            if target is pullback.relu:
                return pullback.sigmoid(*args)
            return super().call_function(target, args, kwargs)

    gm = symbolic_trace(model(pullback_namespace()))
    interpreter = CountingInterpreter(gm)
    logits, sums = interpreter.run(data(pullback))
    assert interpreter.calls == ["conv", "fc"]
    expected = pullback.sigmoid(gm.conv(data(pullback))).sum(dim=(2, 3))
    assert np.array_equal(sums.detach().numpy(), expected.detach().numpy())


def test_a_missing_argument_is_named() -> None:
    gm = symbolic_trace(model(pullback_namespace()))
    with pytest.raises(RuntimeError, match="Expected positional argument for parameter x"):
        Interpreter(gm).run()


def swap_relu(t: Any, gm: Any) -> Any:
    class SwapRelu(t.fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is t.lib.relu:
                return super().call_function(t.lib.sigmoid, args, kwargs)
            return super().call_function(target, args, kwargs)

        def call_module(self, target, args, kwargs):
            result = super().call_module(target, args, kwargs)
            return -result if target == "fc" else result

    return SwapRelu(gm).transform()


def test_a_transformer_rewrites_as_torchs_does() -> None:
    torch_side, ours = both()
    theirs = swap_relu(torch_side, torch_side.fx.symbolic_trace(model(torch_side)))
    gm = symbolic_trace(model(ours))
    rewritten = swap_relu(ours, gm)
    same_code(theirs.code, rewritten.code)
    logits, sums = rewritten(data(pullback))
    hidden = pullback.sigmoid(gm.conv(data(pullback)))
    assert np.array_equal(logits.detach().numpy(),
                          (-gm.fc(hidden.flatten(1))).detach().numpy())
    assert rewritten.conv is gm.conv


def test_an_identity_transformer_gives_the_same_code() -> None:
    gm = symbolic_trace(model(pullback_namespace()))
    assert Transformer(gm).transform().code == gm.code


def test_shape_prop_records_what_torchs_does() -> None:
    torch_side, ours = both()
    theirs = torch_side.fx.symbolic_trace(model(torch_side))
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

    TorchShapeProp(theirs).propagate(data(torch_side.lib))
    gm = symbolic_trace(model(ours))
    ShapeProp(gm).propagate(data(pullback))
    for our_node, their_node in zip(gm.graph.nodes, theirs.graph.nodes):
        assert our_node.name == their_node.name
        ours_meta, theirs_meta = our_node.meta.get("tensor_meta"), their_node.meta.get(
            "tensor_meta")
        assert (ours_meta is None) == (theirs_meta is None), our_node.name
        for a, b in zip(_metas(ours_meta), _metas(theirs_meta)):
            assert a.shape == tuple(b.shape) and str(a.dtype) == str(b.dtype).split(".")[-1]
            assert a.stride == tuple(b.stride) and a.requires_grad == b.requires_grad
    assert gm.graph.find_nodes(op="call_function", target=pullback.relu)[0].meta["type"] \
        is pullback.Tensor


def _metas(meta: Any) -> list[Any]:
    if isinstance(meta, (TensorMetadata,)) or hasattr(meta, "shape") and hasattr(meta, "stride"):
        return [meta]
    if isinstance(meta, (tuple, list)):
        return [m for item in meta for m in _metas(item)]
    return []


def pullback_namespace() -> Any:
    from fx_oracle import PULLBACK

    return PULLBACK


def test_transformer_keeps_get_attr_nodes() -> None:
    class UsesWeight(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(pullback.ones(3))

        def forward(self, x):
            return x * self.weight

    gm = symbolic_trace(UsesWeight())
    rewritten = Transformer(gm).transform()
    assert [n.op for n in rewritten.graph.nodes] == \
        ["placeholder", "get_attr", "call_function", "output"]
    assert rewritten.weight is gm.weight
    assert rewritten.graph.find_nodes(op="call_function")[0].target is operator.mul
