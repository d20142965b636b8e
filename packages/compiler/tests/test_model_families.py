"""Every model family compiles with every registered pass, forward and backward alike.

For a GPT, a CNN, an LSTM and a Transformer (pullback.nn's own), three ways of compiling: the
whole training step (loss, backward and optimizer inside), the model alone in an eager loop
that calls ``loss.backward()`` itself (the forward/backward partition: a nanoGPT trainer's
``torch.compile(model)``), and inference in eval mode. Each graph a compiled call keeps passes
the verifier (SSA order, producers), and every result matches the same code run eagerly.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
import pullback.optim as optim
from compiler_battery import TINY_GPT, gpt, gpt_batch
from pullback.compiler import compile
from pullback.compiler.passes import DEFAULT_PIPELINE
from pullback.nn import functional as F
from pullback.plugins import graph_passes


def every_pass() -> list[str]:
    """The default pipeline, then every other registered pass, then ``dce`` for their
    leftovers."""
    others = [name for name in sorted(graph_passes()) if name not in DEFAULT_PIPELINE]
    return [*DEFAULT_PIPELINE, *others, "dce"]


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU())
        self.head = nn.Linear(6 * 2 * 2, 5)

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        return self.head(self.features(x).flatten(1))


class LSTMClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(11, 8)
        self.lstm = nn.LSTM(8, 12, num_layers=2, batch_first=True)
        self.head = nn.Linear(12, 5)

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        out, _ = self.lstm(self.embed(x))
        return self.head(out[:, -1])


class Seq2Seq(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(11, 16)
        self.transformer = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=1,
                                          num_decoder_layers=1, dim_feedforward=32,
                                          dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 5)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(6))

    def forward(self, x: pb.Tensor) -> pb.Tensor:
        h = self.embed(x)
        out = self.transformer(h, h, tgt_mask=self.causal)
        return self.head(out.mean(1))


def _classes(seed: int, n: int) -> pb.Tensor:
    return pb.tensor(np.random.default_rng(seed).integers(0, 5, n))


def _tokens(seed: int, shape: tuple[int, ...]) -> pb.Tensor:
    return pb.tensor(np.random.default_rng(seed).integers(0, 11, shape))


def _images(seed: int) -> pb.Tensor:
    return pb.tensor(np.random.default_rng(seed).standard_normal((4, 1, 8, 8)).astype("float32"))


# family -> (a fresh seeded model, a batch (x, y) by seed, the loss of the model's output)
FAMILIES: dict[str, tuple[Callable[[], nn.Module], Callable[[int], tuple[Any, Any]],
                          Callable[[nn.Module, Any, Any], pb.Tensor]]] = {
    "gpt": (lambda: gpt("float32"), lambda s: gpt_batch(seed=s),
            lambda m, x, y: m(x, y)[1]),
    "cnn": (ConvNet, lambda s: (_images(s), _classes(s, 4)),
            lambda m, x, y: F.cross_entropy(m(x), y)),
    "lstm": (LSTMClassifier, lambda s: (_tokens(s, (3, 7)), _classes(s, 3)),
             lambda m, x, y: F.cross_entropy(m(x), y)),
    "transformer": (Seq2Seq, lambda s: (_tokens(s, (3, 6)), _classes(s, 3)),
                    lambda m, x, y: F.cross_entropy(m(x), y)),
}
RTOL = 2e-5  # float32; the fused loops' transcendental functions are the C library's


def _twins(family: str) -> tuple[nn.Module, nn.Module]:
    make = FAMILIES[family][0]
    pb.manual_seed(0)
    eager = make()
    pb.manual_seed(0)
    return eager, make()


def _verified_graphs(compiled: Any) -> int:
    """Verify every graph the compiled function keeps; how many there were."""
    graphs = []
    for entry in compiled.entries:
        graphs.append(entry.graph)
        if entry.aot is not None:
            graphs.append(entry.aot.backward_graph)
    for graph in graphs:
        graph.verify()
    return len(graphs)


def _assert_same_state(eager: nn.Module, compiled: nn.Module) -> None:
    """Parameters and buffers (a batch norm's running statistics, updated in place)."""
    theirs = compiled.state_dict()
    for name, p in eager.state_dict().items():
        np.testing.assert_allclose(theirs[name].array, p.array, rtol=RTOL, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_compiled_training_step_with_every_pass_matches_eager(family):
    _, batch, loss_of = FAMILIES[family]
    eager, model = _twins(family)

    def step_of(m: nn.Module) -> Callable[..., pb.Tensor]:
        opt = optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1)

        def step(x: Any, y: Any) -> pb.Tensor:
            loss = loss_of(m, x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss

        return step

    eager_step = step_of(eager)
    compiled = compile(step_of(model), fullgraph=True, passes=every_pass())
    for seed in range(4):
        x, y = batch(seed)
        np.testing.assert_allclose(compiled(x, y).item(), eager_step(x, y).item(), rtol=RTOL)
    assert compiled.traces < 4, "the later calls replay the compiled graph"
    assert _verified_graphs(compiled) >= 1
    _assert_same_state(eager, model)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_compiled_model_in_an_eager_loop_with_every_pass_matches_eager(family):
    """``torch.compile(model)`` in a nanoGPT-style loop: the compiled forward's backward graph
    is partitioned off and optimized on its own (where the algebraic pass once followed a saved
    value's producer into the forward graph)."""
    _, batch, loss_of = FAMILIES[family]
    eager, model = _twins(family)
    compiled = compile(model, fullgraph=True, passes=every_pass())
    optimizers = [optim.AdamW(m.parameters(), lr=1e-2) for m in (eager, model)]
    for seed in range(4):
        x, y = batch(seed)
        losses = []
        for forward, opt in ((eager, optimizers[0]), (compiled, optimizers[1])):
            loss = loss_of(forward, x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        np.testing.assert_allclose(losses[1], losses[0], rtol=RTOL)
    assert all(entry.aot is not None for entry in compiled.entries)
    assert _verified_graphs(compiled) >= 2  # a forward and a backward graph
    _assert_same_state(eager, model)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_compiled_inference_with_every_pass_matches_eager(family):
    _, batch, _ = FAMILIES[family]
    eager, model = _twins(family)
    eager.eval()
    model.eval()
    compiled = compile(model, fullgraph=True, passes=every_pass())
    with pb.no_grad():
        for seed in range(3):
            x, y = batch(seed)
            args = (x, y) if family == "gpt" else (x,)
            got, want = compiled(*args), eager(*args)
            got, want = (got[0], want[0]) if family == "gpt" else (got, want)
            np.testing.assert_allclose(got.array, want.array, rtol=RTOL, atol=1e-5)
    assert _verified_graphs(compiled) == 1


def test_every_pass_is_every_registered_pass():
    assert set(every_pass()) == set(graph_passes())
    assert TINY_GPT.dropout == 0.0  # a dropout mask would be a random number: not capturable
