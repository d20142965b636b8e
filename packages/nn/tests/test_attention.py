"""Attention against PyTorch: scaled_dot_product_attention (masks, causal, scale, dropout),
MultiheadAttention's mask options, and TransformerBlock vs nn.TransformerEncoderLayer."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
import pullback.nn.functional as F
from pullback import nn

from nn_helpers import assert_close, copy_torch_weights

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")


def _pair(a, dtype="float64", grad=True):
    tdt = getattr(torch, dtype)
    return (pullback.tensor(a, dtype=dtype, requires_grad=grad),
            torch.tensor(a, dtype=tdt, requires_grad=grad))


def _compare_with_grads(fn, t_fn, arrays, dtype="float64"):
    ours, theirs = zip(*(_pair(a, dtype) for a in arrays))
    out, t_out = fn(*ours), t_fn(*theirs)
    assert_close(out, t_out, dtype, "forward")
    w = np.random.default_rng(9).standard_normal(tuple(t_out.shape))
    (out * pullback.tensor(w, dtype=dtype)).sum().backward()
    (t_out * torch.tensor(w, dtype=getattr(torch, dtype))).sum().backward()
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_close(a.grad, b.grad, dtype, f"gradient of input {i}")


MASKS = {
    "none": lambda r, L, S: None,
    "bool": lambda r, L, S: np.tril(np.ones((L, S), bool)) | (r.random((L, S)) > 0.5),
    "float": lambda r, L, S: r.standard_normal((L, S)),
    "batched-bool": lambda r, L, S: np.concatenate(
        [np.ones((1, 1, L, S), bool), r.random((1, 1, L, S)) > 0.3], axis=0) | np.eye(
            L, S, dtype=bool),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa_matches_torch(dtype, mask, scale):
    r = np.random.default_rng(0)
    q, k, v = r.standard_normal((2, 2, 4, 3)), r.standard_normal((2, 2, 5, 3)), \
        r.standard_normal((2, 2, 5, 6))
    m = MASKS[mask](r, 4, 5)
    pm = None if m is None else pullback.tensor(m, dtype=dtype if m.dtype.kind == "f" else None)
    tm = None if m is None else torch.tensor(m, dtype=getattr(torch, dtype) if m.dtype.kind == "f"
                                             else torch.bool)
    _compare_with_grads(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=pm, scale=scale),
        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=tm,
                                                                         scale=scale),
        [q, k, v], dtype)


@pytest.mark.parametrize("shape", [(3, 4, 4), (2, 1, 5, 4)])
def test_sdpa_causal_matches_torch(shape):
    r = np.random.default_rng(1)
    q, k, v = (r.standard_normal(shape) for _ in range(3))
    _compare_with_grads(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
        [q, k, v])


def test_sdpa_dropout_is_seeded_and_unbiased():
    r = np.random.default_rng(2)
    q, k = pullback.tensor(r.standard_normal((1, 3, 4))), pullback.tensor(r.standard_normal((1, 6, 4)))
    v = pullback.ones(1, 6, 2, dtype=q.dtype)  # SDPA refuses mixed dtypes, as torch does
    pullback.manual_seed(5)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    pullback.manual_seed(5)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(a, b)  # same seed, same mask
    # With v = 1 every output is sum(kept weights) / (1 - p): its mean over many draws is 1.
    draws = [F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy() for _ in range(400)]
    mean = np.mean(draws)
    assert abs(mean - 1.0) < 0.05, mean
    assert np.std(draws) > 0.1  # the mask really drops weights


def test_sdpa_errors_name_the_op():
    with pytest.raises(pullback.ShapeError, match="scaled_dot_product_attention"):
        F.scaled_dot_product_attention(pullback.randn(2, 3, 4), pullback.randn(2, 5, 3),
                                       pullback.randn(2, 5, 4))
    with pytest.raises(ValueError, match="not both"):
        x = pullback.randn(2, 3, 4)
        F.scaled_dot_product_attention(x, x, x, attn_mask=pullback.ones(3, 3, dtype="bool"),
                                       is_causal=True)


def _mha_pair(dtype="float64", **kwargs):
    t_mha = torch.nn.MultiheadAttention(8, 2, **kwargs).to(getattr(torch, dtype))
    mha = nn.MultiheadAttention(8, 2, **kwargs).to(dtype)
    copy_torch_weights(mha, t_mha)
    return mha, t_mha


@pytest.mark.parametrize("options", [
    dict(key_padding_mask="bool"), dict(key_padding_mask="float"), dict(attn_mask="bool"),
    dict(attn_mask="float"), dict(attn_mask="per-head"), dict(attn_mask="bool", key_padding_mask="bool"),
    dict(need_weights=False), dict(average_attn_weights=False), dict(is_causal=True),
], ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
def test_multihead_attention_masks_match_torch(options):
    r = np.random.default_rng(3)
    mha, t_mha = _mha_pair(batch_first=True)
    mha.eval()
    t_mha.eval()
    n, L = 2, 4
    S = L if options.get("is_causal") else 5
    x, kv = r.standard_normal((n, L, 8)), r.standard_normal((n, S, 8))
    ours, theirs = {}, {}
    kpm = options.get("key_padding_mask")
    if kpm is not None:
        pad = np.zeros((n, S), bool)
        pad[0, -2:] = True
        value = pad if kpm == "bool" else np.where(pad, -1e9, 0.0) + r.standard_normal((n, S))
        ours["key_padding_mask"] = pullback.tensor(value)
        theirs["key_padding_mask"] = torch.tensor(value)
    am = options.get("attn_mask")
    if am is not None or options.get("is_causal"):
        if am == "per-head":
            value = r.standard_normal((n * 2, L, S))
        elif am == "float":
            value = r.standard_normal((L, S))
        else:
            value = np.triu(np.ones((L, S), bool), 1)
            if am is None:  # causal: PyTorch needs the mask; pullback builds it
                theirs["is_causal"] = True
                ours["is_causal"] = True
                theirs["attn_mask"] = torch.tensor(value)
                value = None
        if value is not None:
            ours["attn_mask"] = pullback.tensor(value)
            theirs["attn_mask"] = torch.tensor(value)
    for key in ("need_weights", "average_attn_weights"):
        if key in options:
            ours[key] = theirs[key] = options[key]
    (q, tq), (k, tk) = _pair(x), _pair(kv)
    out, w = mha(q, k, k, **ours)
    t_out, t_w = t_mha(tq, tk, tk, **theirs)
    assert_close(out, t_out, "float64", "output")
    if t_w is None:
        assert w is None
    else:
        assert_close(w, t_w, "float64", "weights")
    g = r.standard_normal(tuple(t_out.shape))
    (out * pullback.tensor(g)).sum().backward()
    (t_out * torch.tensor(g)).sum().backward()
    assert_close(q.grad, tq.grad, "float64", "query gradient")
    assert_close(k.grad, tk.grad, "float64", "key/value gradient")
    t_params = dict(t_mha.named_parameters())
    for name, p in mha.named_parameters():
        assert_close(p.grad, t_params[name].grad, "float64", name)


def test_multihead_attention_dropout_only_in_training():
    mha = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = pullback.randn(2, 4, 8)
    mha.eval()
    a, _ = mha(x, x, x)
    b, _ = mha(x, x, x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    mha.train()
    c, _ = mha(x, x, x, need_weights=False)
    assert not np.allclose(a.detach().numpy(), c.detach().numpy())


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("masks", ["none", "causal", "padding"])
def test_transformer_block_matches_torch_pre_norm_encoder_layer(activation, masks):
    r = np.random.default_rng(4)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0,
                                               activation=activation, batch_first=True,
                                               norm_first=True).double()
    block = nn.TransformerBlock(8, 2, dim_feedforward=16, dropout=0.0, activation=activation).double()
    assert [n for n, _ in block.named_parameters()] == [n for n, _ in t_layer.named_parameters()]
    copy_torch_weights(block, t_layer)
    x = r.standard_normal((2, 5, 8))
    ours, theirs = {}, {}
    if masks == "causal":
        mask = np.triu(np.ones((5, 5), bool), 1)
        ours["attn_mask"] = pullback.tensor(mask)
        theirs["src_mask"] = torch.tensor(mask)
    elif masks == "padding":
        pad = np.zeros((2, 5), bool)
        pad[1, 3:] = True
        ours["key_padding_mask"] = pullback.tensor(pad)
        theirs["src_key_padding_mask"] = torch.tensor(pad)
    (px, tx) = _pair(x)
    out, t_out = block(px, **ours), t_layer(tx, **theirs)
    if masks == "padding":  # PyTorch's fast path may zero padded rows; compare real rows only
        t_out = torch.where(torch.tensor(pad)[..., None], torch.zeros(()), t_out)
        out = pullback.where(pullback.tensor(pad)[..., None], 0.0, out)
    assert_close(out, t_out, "float64", "block output")
    out.sum().backward()
    t_out.sum().backward()
    assert_close(px.grad, tx.grad, "float64", "input gradient")
    t_params = dict(t_layer.named_parameters())
    for name, p in block.named_parameters():
        assert_close(p.grad, t_params[name].grad, "float64", name)
