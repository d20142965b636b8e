"""The models both exporters are tested on (C99 and ONNX), with their example inputs, and the
comparison with eager pullback (the oracle: an export must compute what the model computes).

Each model is small enough to compile in a second or two; together they cover the issue's
battery: MLPs, a LeNet-like CNN (conv, max and average pooling, batch norm folded into the
convolutions), convolution and pooling geometry (stride, padding, dilation, groups, 1-d layers),
a Transformer block, the char-GPT's forward at a fixed length, and every activation of nn.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.nn as nn
import pullback.nn.modules.activation as activation
from pullback.gpt import GPT, GPTConfig

TOLERANCE = 1e-5  # float32: largest |export - eager| over the largest |eager|
TINY_GPT = GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.0,
                     bias=True)


def _randomize_batch_norm(model: nn.Module, seed: int) -> nn.Module:
    """Running statistics and affine parameters far from (0, 1, 1, 0), so that folding them
    is tested (a fresh BatchNorm is the identity)."""
    rng = np.random.default_rng(seed)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = m.running_mean.shape
            m.running_mean.array[...] = rng.standard_normal(c)
            m.running_var.array[...] = rng.uniform(0.5, 2.0, c)
            m.weight.array[...] = rng.standard_normal(c)
            m.bias.array[...] = rng.standard_normal(c)
    return model


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 16), nn.BatchNorm1d(16),
                         nn.Tanh(), nn.Linear(16, 5))


def lenet() -> nn.Module:
    """LeNet's shape on 16x16 images: conv, batch norm, ReLU, max pool, conv, batch norm, average
    pool, two linear layers."""
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.AvgPool2d(2), nn.Flatten(), nn.Linear(72, 24), nn.ReLU(),
                         nn.Linear(24, 10))


class ConvGeometry(nn.Module):
    """Strides, padding, dilation, groups, no bias, ceil mode, count_include_pad, and 1-d
    layers (2-d ones of height 1 in the graph)."""

    def __init__(self) -> None:
        super().__init__()
        self.grouped = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2)
        self.dilated = nn.Conv2d(8, 6, 3, dilation=2, padding=2, bias=False)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.average = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.line = nn.Conv1d(6, 4, 3, padding=1)
        self.line_pool = nn.MaxPool1d(2)

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        y = self.average(self.pool(pb.relu(self.dilated(self.grouped(x)))))
        b, c, h, w = y.shape
        return self.line_pool(self.line(y.reshape(b, c, h * w)))


class Activations(nn.Module):
    """Every activation layer of pullback.nn (found in its module, so that a new one is tested
    as soon as it exists) and F.hardtanh, each applied to the input: one output each."""

    ARGUMENTS: dict[str, dict[str, Any]] = {"Threshold": {"threshold": 0.1, "value": -2.0},
                                            "Softmax": {"dim": -1}, "Softmin": {"dim": -1},
                                            "LogSoftmax": {"dim": -1}}

    def __init__(self) -> None:
        super().__init__()
        self.names = activation_names()
        for name in self.names:
            self.add_module(name, getattr(activation, name)(**self.ARGUMENTS.get(name, {})))

    def forward(self, x: pb.Tensor) -> tuple[pb.Tensor, ...]:
        outs = [getattr(self, name)(x) for name in self.names]
        return tuple(outs) + (nn.functional.hardtanh(x, -0.5, 2.0),)


def activation_names() -> list[str]:
    return sorted(n for n, c in inspect.getmembers(activation, inspect.isclass)
                  if issubclass(c, nn.Module) and c.__module__ == activation.__name__
                  and not n.startswith("_"))


def _tokens(shape: tuple[int, ...], seed: int) -> pb.Tensor:
    return pb.tensor(np.random.default_rng(seed).integers(0, TINY_GPT.vocab_size, shape))


def _normal(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> pb.Tensor:
    rng = np.random.default_rng(seed)
    return pb.tensor((rng.standard_normal(shape) * scale).astype(np.float32))


# name -> (make the model, its example inputs)
MODELS: dict[str, tuple[Callable[[], Any], Callable[[], tuple[pb.Tensor, ...]]]] = {
    "mlp": (mlp, lambda: (_normal((3, 20), 1),)),
    "lenet": (lenet, lambda: (_normal((2, 1, 16, 16), 2),)),
    "conv_geometry": (ConvGeometry, lambda: (_normal((2, 4, 11, 9), 3),)),
    "transformer_block": (lambda: nn.TransformerBlock(16, 2, 32, dropout=0.0,
                                                      activation="gelu"),
                          lambda: (_normal((2, 5, 16), 4),)),
    "gpt": (lambda: GPT(TINY_GPT), lambda: (_tokens((2, TINY_GPT.block_size), 5),)),
    "activations": (Activations, lambda: (_normal((2, 3, 4, 6), 6, scale=3.0),)),
}


def build(name: str, seed: int = 0) -> tuple[Any, tuple[pb.Tensor, ...]]:
    """The model (eval mode, seeded weights, randomized batch norms) and its inputs."""
    make, inputs = MODELS[name]
    pb.manual_seed(seed)
    model = _randomize_batch_norm(make(), seed)
    model.eval()
    return model, inputs()


def eager_outputs(model: Any, inputs: tuple[pb.Tensor, ...]) -> list[np.ndarray]:
    """The model's outputs (Tensors of a nested result, in order) as arrays."""
    from pullback.compiler._pytree import flatten

    with pb.no_grad():
        result = model(*inputs)
    return [t.numpy() for t in flatten(result)[0]]


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    """``max |actual - expected| / max |expected|`` (NaN when shapes or NaNs differ)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return float("nan")
    if expected.dtype.kind in "biu":  # booleans and integers: exactly
        return 0.0 if np.array_equal(actual, expected) else float("inf")
    if not np.array_equal(np.isnan(actual), np.isnan(expected)):
        return float("nan")
    finite = ~np.isnan(expected)
    scale = float(np.abs(expected[finite]).max(initial=0.0)) or 1.0
    return float(np.abs(actual[finite] - expected[finite]).max(initial=0.0)) / scale


def mismatches(actual: list[np.ndarray], expected: list[np.ndarray],
               tolerance: float = TOLERANCE) -> str | None:
    """None when every output matches; else which ones do not, and by how much."""
    if len(actual) != len(expected):
        return f"{len(actual)} outputs, eager gives {len(expected)}"
    bad = []
    for i, (a, e) in enumerate(zip(actual, expected)):
        error = relative_error(a, e)
        if not error <= tolerance:
            bad.append(f"output {i} {np.shape(e)}: relative error {error:.3g}")
    return "; ".join(bad) or None


_POSITIVE = {"log", "sqrt", "rsqrt", "log2", "log10", "reciprocal", "pow"}
_BINARY = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "greater", "greater_equal",
           "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or",
           "logical_xor", "tanh_backward", "sigmoid_backward", "relu_backward", "gelu_backward"}
_ATTRS = {"clamp": {"min": -0.25, "max": 0.5}, "cast": {"dtype": np.dtype("float64")},
          "leaky_relu": {"negative_slope": 0.2}, "softplus": {"beta": 2.0, "threshold": 1.0},
          "gelu": {"approximate": "tanh"}}


def elementwise_case(op: str) -> tuple[Callable[..., Any], tuple[pb.Tensor, ...]]:
    """``op`` alone as a function of float32 inputs in its domain (a zero, a tie for round,
    equal pairs for the comparisons, NaN and infinities for the tests of them), and the
    inputs."""
    from pullback.registry import get_op

    rng = np.random.default_rng(1)
    values = rng.uniform(-0.9, 0.9, (3, 5)).astype(np.float32)
    values[0, :2] = (0.0, 0.5)
    if op in _POSITIVE:
        values = np.abs(values) + 0.2
    elif op == "acosh":
        values = np.abs(values) + 1.2
    elif op in ("isnan", "isinf", "isfinite"):
        values[2, :3] = (np.nan, np.inf, -np.inf)
    second = rng.uniform(0.2, 0.9, values.shape) * rng.choice([-1.0, 1.0], values.shape)
    if op in _POSITIVE:
        second = np.abs(second)
    second[1, :2] = values[1, :2]
    x, y = pb.tensor(values), pb.tensor(second.astype(np.float32))
    args = (x, y) if op in _BINARY else (x > 0, x, y) if op == "where" else (x,)
    attrs = _ATTRS.get(op, {})

    def f(*a: pb.Tensor) -> pb.Tensor:
        return pb.dispatch.apply(get_op(op), *a, **attrs)

    return f, args
