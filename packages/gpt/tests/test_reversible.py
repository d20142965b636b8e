"""The reversible GPT (``GPTConfig(reversible=True)``, ``--reversible``): the same parameters
as the ordinary model, gradients equal to ordinary backprop through its layers, sampling with
the key/value cache, and a training run from the CLI."""

from __future__ import annotations

import dataclasses

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.gpt import GPT
from pullback.gpt.checkpoint import load_checkpoint
from pullback.gpt.cli import main

from gpt_support import TINY

REVERSIBLE = dataclasses.replace(TINY, reversible=True, dropout=0.1)


def _ordinary_loss(model: GPT, idx, targets):
    """The reversible model's forward with every layer run by ordinary autograd."""
    t = model.transformer
    x = t.wte(idx) + t.wpe(pb.arange(idx.shape[1]))
    y = pb.cat([x, x], axis=-1)
    for layer in t.h.stack:
        y = layer(y)
    first, second = y.split(x.shape[-1], axis=-1)
    logits = model.lm_head(t.ln_f((first + second) * 0.5))
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def test_same_parameter_count_as_the_ordinary_model():
    ordinary = dataclasses.replace(REVERSIBLE, reversible=False)
    assert GPT(REVERSIBLE).num_parameters() == GPT(ordinary).num_parameters()


def test_gradients_equal_ordinary_backprop_with_dropout():
    pb.manual_seed(0)
    model = GPT(REVERSIBLE).to(pb.float64)
    model.transformer.drop.p = 0.0  # the embedding's dropout is outside the stack
    idx = pb.tensor(np.random.default_rng(0).integers(0, TINY.vocab_size, (3, 12)))
    pb.manual_seed(5)
    _, loss = model(idx, idx)
    loss.backward()
    reversible = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    pb.manual_seed(5)
    expected = _ordinary_loss(model, idx, idx)
    expected.backward()
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-13)
    for got, p in zip(reversible, model.parameters(), strict=True):
        np.testing.assert_allclose(got, p.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_cached_sampling_gives_the_logits_of_a_full_forward():
    pb.manual_seed(0)
    model = GPT(REVERSIBLE).eval()
    idx = pb.randint(0, TINY.vocab_size, (2, 10))
    with pb.no_grad():
        logits, _ = model(idx)
        _, cache = model.forward_cached(idx[:, :9], None)
        last, _ = model.forward_cached(idx[:, 9:], cache)
    np.testing.assert_allclose(last.numpy(), logits[:, -1].numpy(), rtol=1e-5, atol=1e-6)
    assert tuple(model.generate(idx[:, :3], 30).shape) == (2, 33)  # past the block size


def test_cli_trains_samples_and_evaluates_a_reversible_model(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert main(["train", "--data", str(corpus), "--config", "nano-cpu", "--steps", "3",
                 "--batch-size", "2", "--warmup", "1", "--eval-interval", "3", "--eval-iters", "1",
                 "--reversible", "--out", str(out), "--quiet"]) == 0
    ckpt = load_checkpoint(out)
    assert ckpt.model_config.reversible and ckpt.train_config.model.reversible
    model = GPT(ckpt.model_config)
    model.load_state_dict(ckpt.model_state)  # the saved names are the reversible layers'
    assert main(["sample", "--checkpoint", str(out), "--prompt", "e",
                 "--max-new-tokens", "20"]) == 0
    assert main(["eval", "--checkpoint", str(out), "--data", str(corpus),
                 "--eval-iters", "1"]) == 0
