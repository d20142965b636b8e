"""Models, inputs and training steps the compiler tests run (eager pullback is the oracle: a
compiled run must give what the same code gives eagerly)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.nn as nn
import pullback.optim as optim
from pullback.compiler import Graph
from pullback.gpt import GPT, GPTConfig

TINY_GPT = GPTConfig(vocab_size=17, block_size=8, n_layer=2, n_head=2, n_embd=16, dropout=0.0,
                     bias=True)


def mlp(dtype: str = "float32", seed: int = 0) -> nn.Module:
    pb.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 4)).to(dtype)


def mlp_batch(dtype: str = "float32", seed: int = 1) -> tuple[pb.Tensor, pb.Tensor]:
    rng = np.random.default_rng(seed)
    return (pb.tensor(rng.standard_normal((10, 6)).astype(dtype)),
            pb.tensor(rng.integers(0, 4, 10)))


def gpt(dtype: str = "float32", seed: int = 0, config: GPTConfig = TINY_GPT) -> GPT:
    pb.manual_seed(seed)
    return GPT(config).to(dtype)


def gpt_batch(seed: int = 1, config: GPTConfig = TINY_GPT, batch: int = 3
              ) -> tuple[pb.Tensor, pb.Tensor]:
    rng = np.random.default_rng(seed)
    shape = (batch, config.block_size)
    return (pb.tensor(rng.integers(0, config.vocab_size, shape)),
            pb.tensor(rng.integers(0, config.vocab_size, shape)))


def classification_loss(model: nn.Module, x: pb.Tensor, y: pb.Tensor) -> pb.Tensor:
    out = model(x, y) if isinstance(model, GPT) else model(x)
    if isinstance(out, tuple):
        return out[1]
    return nn.functional.cross_entropy(out, y)


def loss_and_backward(model: nn.Module) -> Callable[..., pb.Tensor]:
    """The loss with its backward inside (gradients land in ``.grad``); returns the loss."""

    def f(x: pb.Tensor, y: pb.Tensor) -> pb.Tensor:
        loss = classification_loss(model, x, y)
        loss.backward()
        return loss

    return f


OPTIMIZERS: dict[str, Callable[[Any], optim.Optimizer]] = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.05),
    "sgd_momentum": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                         weight_decay=1e-3),
    "adam": lambda ps: optim.Adam(ps, lr=1e-2),
    "adamw": lambda ps: optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    "rmsprop": lambda ps: optim.RMSprop(ps, lr=1e-3, momentum=0.5),
}


def training_step(model: nn.Module, opt: optim.Optimizer) -> Callable[..., pb.Tensor]:
    """The usual step: loss, zero_grad, backward, step; returns the loss."""

    def step(x: pb.Tensor, y: pb.Tensor) -> pb.Tensor:
        loss = classification_loss(model, x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def placeholder_values(graph: Graph, inputs: list[pb.Tensor]) -> list[Any]:
    """What each placeholder of ``graph`` reads now (``inputs``: the flattened arguments)."""
    values = []
    for ph in graph.placeholders:
        if ph.kind == "input":
            values.append(inputs[ph.position].array)
        elif ph.kind == "array":
            values.append(ph.source)
        elif ph.kind == "grad":
            values.append(ph.source.grad.array)
        elif ph.kind == "scalar":
            raise ValueError("graphs with runtime scalars need a compiled call")
        else:
            values.append(ph.source.array)
    return values
