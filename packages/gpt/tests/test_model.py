"""The GPT module: shapes, weight tying, initialization, training signal."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback as pb
from pullback.gpt import GPT, GPTConfig

from gpt_support import TINY


def test_forward_shapes_and_loss(tiny_model):
    x = pb.randint(0, TINY.vocab_size, (3, 10))
    logits, loss = tiny_model(x, x)
    assert logits.shape == (3, 10, TINY.vocab_size)
    # Near uniform predictions at init: loss close to log(vocab).
    assert abs(loss.item() - math.log(TINY.vocab_size)) < 0.3
    assert tiny_model(x)[1] is None


def test_sequence_longer_than_block_is_a_clear_error(tiny_model):
    with pytest.raises(ValueError, match="block size 16"):
        tiny_model(pb.zeros(1, 17, dtype=pb.int64))


def test_bad_config_is_rejected():
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(n_embd=10, n_head=3)


def test_weights_tied_at_construction(tiny_model):
    assert tiny_model.lm_head.weight is tiny_model.transformer.wte.weight


def test_tying_survives_load_state_dict(tiny_model):
    other = GPT(TINY)
    other.load_state_dict(tiny_model.state_dict())
    assert other.lm_head.weight is other.transformer.wte.weight
    with pb.no_grad():
        other.transformer.wte.weight.add_(1.0)
    np.testing.assert_array_equal(other.lm_head.weight.detach().numpy(),
                                  other.transformer.wte.weight.detach().numpy())


def test_tying_survives_to(tiny_model):
    tiny_model.to(pb.float64)
    assert tiny_model.lm_head.weight is tiny_model.transformer.wte.weight
    assert tiny_model.lm_head.weight.dtype == pb.float64
    x = pb.randint(0, TINY.vocab_size, (2, 8))
    _, loss = tiny_model(x, x)
    loss.backward()
    # One parameter, one gradient holding both uses (embedding and head).
    assert tiny_model.transformer.wte.weight.grad is tiny_model.lm_head.weight.grad


def test_tied_parameter_counted_once(tiny_model):
    names = [n for n, _ in tiny_model.named_parameters()]
    assert "lm_head.weight" not in names or "transformer.wte.weight" not in names


def test_gpt2_initialization():
    pb.manual_seed(1)
    cfg = GPTConfig(vocab_size=50, block_size=32, n_layer=8, n_head=4, n_embd=128)
    model = GPT(cfg)
    params = dict(model.named_parameters())
    proj = np.concatenate([params[f"transformer.h.{i}.mlp.c_proj.weight"].detach().numpy().ravel()
                           for i in range(cfg.n_layer)])
    fc = np.concatenate([params[f"transformer.h.{i}.mlp.c_fc.weight"].detach().numpy().ravel()
                         for i in range(cfg.n_layer)])
    assert proj.std() == pytest.approx(0.02 / math.sqrt(2 * cfg.n_layer), rel=0.03)
    assert fc.std() == pytest.approx(0.02, rel=0.03)
    assert params["transformer.wte.weight"].detach().numpy().std() == pytest.approx(0.02, rel=0.05)


def test_a_few_steps_fit_a_fixed_batch(tiny_model):
    import pullback.optim as optim

    x = pb.randint(0, TINY.vocab_size, (4, 16))
    opt = optim.AdamW(tiny_model.parameters(), lr=1e-2)
    first = None
    for _ in range(30):
        _, loss = tiny_model(x[:, :-1], x[:, 1:])
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first
