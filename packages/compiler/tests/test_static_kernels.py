"""The kernels a compiled program lowers with its static shapes (convolution, max pooling,
linear layers: _static_kernels.py) give eager's numbers bit for bit, forward and backward,
over the geometry they handle; a call of a compiled inference function goes through the short
path (no write-back, no optimizer numbers) and still follows the guards."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
from pullback.compiler import compile
from pullback.compiler._executor import kernel_for

CONVOLUTIONS = {
    "padded": lambda: nn.Conv2d(3, 4, 3, padding=1),
    "strided-dilated": lambda: nn.Conv2d(3, 4, 3, stride=2, dilation=2, padding=2),
    "grouped-nobias": lambda: nn.Conv2d(4, 6, (2, 3), groups=2, bias=False),
    "same-asymmetric": lambda: nn.Conv2d(3, 2, 4, padding="same"),
    "1d": lambda: nn.Conv1d(3, 4, 3, stride=2, padding=1),
}
POOLS = {
    "2x2": lambda: nn.MaxPool2d(2),
    "padded-strided-dilated-ceil": lambda: nn.MaxPool2d(3, stride=2, padding=1, dilation=2,
                                                        ceil_mode=True),
    "3d": lambda: nn.MaxPool3d(2, padding=1),
}


def _inputs(layer_name, dtype, batch=2):
    rng = np.random.default_rng(0)
    shape = {"1d": (batch, 3, 11), "3d": (batch, 3, 5, 6, 7)}.get(
        layer_name, (batch, 4 if "grouped" in layer_name else 3, 9, 8))
    x = rng.standard_normal(shape)
    x.reshape(-1)[:3] = [np.inf, -np.inf, np.nan]  # propagated as eager propagates them
    return pb.tensor(x.astype(dtype))


def _lowered_ops(compiled):
    entry = compiled.entries[-1]
    return {node.op for node in entry.graph.nodes
            if getattr(kernel_for(node, "cpu")[0], "__name__", "") in ("conv", "max_pool",
                                                                        "linear")}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CONVOLUTIONS) + sorted(POOLS))
def test_lowered_windows_give_eager_results_bit_for_bit(name, dtype):
    pb.manual_seed(0)
    layer = (CONVOLUTIONS.get(name) or POOLS[name])().to(dtype)
    model = nn.Sequential(layer, nn.ReLU())
    compiled = compile(model)
    x = _inputs(name, dtype)
    with pb.no_grad():
        eager = model(x).numpy()
        compiled(x)
        np.testing.assert_array_equal(compiled(x).numpy(), eager)
    # every one is lowered: a float32 convolution that eager runs as one GEMM per image calls
    # that C kernel straight, the others their static columns or windows
    assert _lowered_ops(compiled) & {"nn.conv2d", "nn.max_pool2d", "nn.max_pool3d"}


def test_a_lowered_convolution_keeps_eager_gradients():
    pb.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, stride=2), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16, 3))
    twin = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, stride=2), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(16, 3))
    twin.load_state_dict(model.state_dict())
    x = _inputs("padded", "float32", batch=3)
    x.array[np.isnan(x.array) | np.isinf(x.array)] = 0.5

    def loss(m, inputs):
        return (m(inputs) ** 2).sum()

    step = compile(lambda inputs: loss(model, inputs).backward())
    for _ in range(2):  # traced, then replayed
        for p in model.parameters():
            p.grad = None
        step(x)
    loss(twin, x).backward()
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy(), err_msg=name)


def test_a_linear_layer_of_one_row_is_lowered_and_exact():
    pb.manual_seed(0)
    model = nn.Sequential(nn.Linear(7, 5), nn.ReLU(), nn.Linear(5, 3))  # ReLU: exact in C too
    compiled = compile(model)
    x = pb.randn(1, 7)
    with pb.no_grad():
        compiled(x)
        np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
    assert "nn.linear" in _lowered_ops(compiled)


def test_the_short_call_of_an_inference_function_follows_its_guards():
    pb.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.Dropout(0.5))
    compiled = compile(model)
    x = pb.randn(2, 4)
    model.eval()
    with pb.no_grad():
        compiled(x)
        first = compiled(x).numpy()
        model[0].weight.array[...] *= 2  # weights are read at every call, not frozen
        np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
        assert not np.array_equal(first, compiled(x).numpy())
        model.train()  # a training flag changes: traced again
        compiled(x)
    assert compiled.traces == 2
    with pb.no_grad():
        out = compiled(pb.randn(3, 4))  # another shape: traced again
    assert compiled.traces == 3 and tuple(out.shape) == (3, 3)
