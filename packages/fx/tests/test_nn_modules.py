"""Every layer class of pullback.nn (``pullback.nn.modules.__all__``), traced: as a leaf inside a
model (one ``call_module`` node, as torch.fx records torch.nn's layers), and traced through as
the root. Each GraphModule runs on random float64 inputs and must give the original's results
bit for bit."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest
from fx_layer_cases import ABSTRACT, CASES

import pullback
from pullback import nn
from pullback.fx import GraphModule, TraceError, symbolic_trace
from pullback.nn import modules

NAMES = sorted(CASES)

# Layers whose forward decides in Python from the input's rank or shape (unbatched inputs,
# checks that name the layer): a Proxy has no rank, so tracing through them stops with a
# TraceError at that line, as it would in torch.fx. As leaves (the first test) they trace.
SHAPE_DEPENDENT = {
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "AlphaDropout", "AvgPool2d", "AvgPool3d",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
    "ConvTranspose2d", "ConvTranspose3d", "Dropout1d", "Dropout2d", "Dropout3d",
    "FeatureAlphaDropout", "GRU", "GRUCell", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "LPPool1d", "LPPool2d", "LPPool3d", "LSTM", "LSTMCell", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "MultiHeadAttention",
    "MultiheadAttention", "RNN", "RNNCell", "Softmax2d", "Transformer", "TransformerDecoder",
    "TransformerEncoder", "Unflatten",
}


def test_every_layer_class_has_a_case() -> None:
    assert set(CASES) == set(modules.__all__) - ABSTRACT
    assert SHAPE_DEPENDENT <= set(CASES)


def layer_and_inputs(name: str) -> tuple[nn.Module, list[Any]]:
    make, inputs = CASES[name]
    pullback.manual_seed(0)
    layer = make().double().eval()
    arrays = inputs(np.random.default_rng(sum(map(ord, name))))
    return layer, [pullback.tensor(a, dtype=pullback.float64 if a.dtype.kind == "f" else None)
                   if isinstance(a, np.ndarray) else a for a in arrays]


def assert_identical(expected: Any, actual: Any, where: str = "output") -> None:
    """Same structure; tensors of the same dtype and shape, bit for bit."""
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_identical(e, a, f"{where}[{i}]")
    elif isinstance(expected, pullback.Tensor):
        assert isinstance(actual, pullback.Tensor), where
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
        assert np.array_equal(actual.detach().numpy(), expected.detach().numpy(),
                              equal_nan=True), where
    else:
        assert actual == expected, where


class Holder(nn.Module):
    """A model that calls one layer on its inputs (one, two, three or four)."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer


class One(Holder):
    def forward(self, a):
        return self.layer(a)


class Two(Holder):
    def forward(self, a, b):
        return self.layer(a, b)


class Three(Holder):
    def forward(self, a, b, c):
        return self.layer(a, b, c)


class Four(Holder):
    def forward(self, a, b, c, d):
        return self.layer(a, b, c, d)


HOLDERS = {1: One, 2: Two, 3: Three, 4: Four}


@pytest.mark.parametrize("name", NAMES)
def test_each_layer_is_one_call_inside_a_traced_model(name: str) -> None:
    layer, inputs = layer_and_inputs(name)
    model = HOLDERS[len(inputs)](layer)
    gm = symbolic_trace(model)
    gm.graph.lint()
    calls = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    assert [(n.op, n.target) for n in calls] == [("call_module", "layer")]
    assert gm.layer is layer
    assert list(gm.state_dict()) == list(model.state_dict())
    with pullback.no_grad():
        assert_identical(layer(*inputs), gm(*inputs))


def unused_defaults(layer: nn.Module, given: int) -> dict[str, Any]:
    """The parameters of ``forward`` after the inputs given, fixed to their defaults (what a
    user passes as concrete_args to trace a layer whose optional inputs are absent)."""
    parameters = list(inspect.signature(type(layer).forward).parameters.values())[1 + given:]
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


@pytest.mark.parametrize("name", NAMES)
def test_each_layer_traced_through_gives_its_own_results(name: str) -> None:
    layer, inputs = layer_and_inputs(name)
    concrete = unused_defaults(layer, len(inputs))
    if name in SHAPE_DEPENDENT:
        with pytest.raises((TraceError, RuntimeError)) as caught:
            symbolic_trace(layer, concrete_args=concrete)
        message = str(caught.value)
        # the error names the layer's own line that needed the value
        assert "packages/nn/src/pullback/nn" in message.replace("\\", "/") or \
            "site-packages/pullback/nn" in message.replace("\\", "/"), message
        assert ("symbolically traced variables cannot be used as inputs to control flow"
                in message or "cannot be iterated" in message or "'len'" in message), message
        return
    gm = symbolic_trace(layer, concrete_args=concrete)
    gm.graph.lint()
    assert isinstance(gm, GraphModule) and type(gm).__name__ == name
    with pullback.no_grad():
        assert_identical(layer(*inputs), gm(*inputs))
