"""Sampling with the KV cache."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

from gpt_support import TINY


def _uncached_greedy(model, idx, n):
    out = idx
    for _ in range(n):
        logits, _ = model(out[:, -TINY.block_size:])
        nxt = logits[:, -1, :].argmax(axis=-1, keepdims=True)
        out = pb.cat([out, nxt], axis=1)
    return out


def test_cached_greedy_matches_uncached_within_block(tiny_model):
    tiny_model.eval()
    idx = pb.randint(0, TINY.vocab_size, (2, 3))
    cached = tiny_model.generate(idx, 12, top_k=1)
    with pb.no_grad():
        plain = _uncached_greedy(tiny_model, idx, 12)
    np.testing.assert_array_equal(cached.numpy(), plain.numpy())


def test_cached_logits_match_full_forward(tiny_model):
    tiny_model.eval()
    idx = pb.randint(0, TINY.vocab_size, (1, 10))
    with pb.no_grad():
        full, _ = tiny_model(idx)
        logits, cache = tiny_model.forward_cached(idx[:, :6], None)
        for t in range(6, 10):
            np.testing.assert_allclose(logits.numpy(), full[:, t - 1, :].numpy(), atol=1e-5)
            logits, cache = tiny_model.forward_cached(idx[:, t:t + 1], cache)


def test_generation_beyond_block_size_costs_linear_work(tiny_model):
    tiny_model.eval()
    positions = []
    original = tiny_model.forward_cached

    def counting(idx, cache):
        positions.append(idx.shape[1])
        return original(idx, cache)

    tiny_model.forward_cached = counting
    out = tiny_model.generate(pb.zeros(1, 1, dtype=pb.int64), 200,
                              generator=np.random.default_rng(0))
    assert out.shape == (1, 201)
    # Each new token costs one position, plus a re-fill of block/2 positions every block/2 steps.
    assert sum(positions) <= 200 * 2 + TINY.block_size


def test_sampling_is_reproducible_with_a_seed(tiny_model):
    idx = pb.zeros(1, 1, dtype=pb.int64)
    a = tiny_model.generate(idx, 20, temperature=1.0, generator=np.random.default_rng(5))
    b = tiny_model.generate(idx, 20, temperature=1.0, generator=np.random.default_rng(5))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_bad_temperature(tiny_model):
    with pytest.raises(ValueError, match="temperature"):
        tiny_model.generate(pb.zeros(1, 1, dtype=pb.int64), 2, temperature=0.0)
