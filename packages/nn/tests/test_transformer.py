"""The Transformer classes and MultiheadAttention's PyTorch options against PyTorch with
identical weights: outputs, gradients of the inputs and of every parameter, float64 (to 1e-10)
and float32, train (dropout 0) and eval (dropout on), with every mask the classes take."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.errors import ShapeError

from nn_helpers import assert_close, copy_torch_weights

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")

E, HEADS, FF = 8, 2, 12


def _masks(framework, spec: dict, dtype: str) -> dict:
    """The keyword masks of ``spec`` (name -> NumPy array) as ``framework`` tensors."""
    out = {}
    for name, value in spec.items():
        if isinstance(value, np.ndarray):
            if value.dtype == bool:
                value = framework.tensor(value)
            else:
                value = framework.tensor(value, dtype=getattr(framework, dtype) if framework
                                         is torch else dtype)
        out[name] = value
    return out


def _compare(make, arrays: list[np.ndarray], masks: dict, dtype: str, mode: str,
             what: str) -> None:
    ours, theirs = make(nn), make(torch.nn).to(getattr(torch, dtype))
    ours.to(dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict()), f"{what}: state_dict keys"
    copy_torch_weights(ours, theirs)
    if mode == "eval":
        ours.eval()
        theirs.eval()
    p_in = [pullback.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in arrays]
    out = ours(*p_in, **_masks(pullback, masks, dtype))
    t_out = theirs(*t_in, **_masks(torch, masks, dtype))
    if isinstance(t_out, tuple):  # MultiheadAttention: (output, weights)
        assert_close(out[1], t_out[1], dtype, f"{what}: attention weights ({mode})")
        out, t_out = out[0], t_out[0]
    assert tuple(out.shape) == tuple(t_out.shape), what
    assert_close(out, t_out, dtype, f"{what}: output ({mode})")
    weights = np.random.default_rng(1).standard_normal(tuple(t_out.shape))
    (out * pullback.tensor(weights, dtype=dtype)).sum().backward()
    (t_out * torch.tensor(weights, dtype=getattr(torch, dtype))).sum().backward()
    for i, (a, b) in enumerate(zip(p_in, t_in)):
        assert_close(a.grad, b.grad, dtype, f"{what}: gradient of input {i} ({mode})")
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, t_params[name].grad, dtype, f"{what}: gradient of {name} ({mode})")


R = np.random.default_rng(0)
CAUSAL_BOOL = np.triu(np.ones((5, 5), bool), 1)
CAUSAL_FLOAT = np.triu(np.full((5, 5), -np.inf), 1)
PADDING = np.array([[False] * 5, [False, False, False, True, True]])
MEMORY_PADDING = np.array([[False] * 6, [False] * 4 + [True] * 2])
ADDITIVE = R.standard_normal((5, 6))


def _encoder_layer(**kw):
    return lambda m: m.TransformerEncoderLayer(E, HEADS, FF, **kw)


def _decoder_layer(**kw):
    return lambda m: m.TransformerDecoderLayer(E, HEADS, FF, **kw)


SRC, TGT = R.standard_normal((5, 2, E)), R.standard_normal((5, 2, E))
MEMORY = R.standard_normal((6, 2, E))

# (id, make(nn), inputs, masks, modes)
CASES = [
    ("EncoderLayer", _encoder_layer(dropout=0.0), [SRC], {}, ("train",)),
    ("EncoderLayer-dropout-eval", _encoder_layer(), [SRC], {"src_mask": CAUSAL_FLOAT},
     ("eval",)),
    ("EncoderLayer-norm_first-gelu-batch_first", _encoder_layer(
        dropout=0.0, norm_first=True, activation="gelu", batch_first=True),
     [SRC.transpose(1, 0, 2)], {"src_key_padding_mask": PADDING}, ("train",)),
    ("EncoderLayer-callable-activation-nobias", lambda m: m.TransformerEncoderLayer(
        E, HEADS, FF, dropout=0.0, activation=m.GELU(approximate="tanh"), bias=False),
     [SRC], {"src_mask": CAUSAL_BOOL, "is_causal": True}, ("train",)),
    ("EncoderLayer-unbatched", _encoder_layer(dropout=0.0), [SRC[:, 0]], {}, ("train",)),
    ("DecoderLayer", _decoder_layer(dropout=0.0), [TGT, MEMORY],
     {"tgt_mask": CAUSAL_FLOAT, "memory_mask": ADDITIVE,
      "tgt_key_padding_mask": PADDING, "memory_key_padding_mask": MEMORY_PADDING},
     ("train",)),
    ("DecoderLayer-norm_first-dropout-eval", _decoder_layer(norm_first=True), [TGT, MEMORY],
     {"tgt_mask": CAUSAL_BOOL, "tgt_is_causal": True}, ("eval",)),
    ("Encoder-2-layers-norm", lambda m: m.TransformerEncoder(
        m.TransformerEncoderLayer(E, HEADS, FF, dropout=0.0), 2, norm=m.LayerNorm(E)),
     [SRC], {"mask": CAUSAL_FLOAT, "src_key_padding_mask": PADDING}, ("train",)),
    ("Decoder-2-layers", lambda m: m.TransformerDecoder(
        m.TransformerDecoderLayer(E, HEADS, FF, dropout=0.0, batch_first=True), 2),
     [TGT.transpose(1, 0, 2), MEMORY.transpose(1, 0, 2)], {"tgt_mask": CAUSAL_FLOAT},
     ("train",)),
    ("Transformer", lambda m: m.Transformer(E, HEADS, 2, 1, FF, dropout=0.0),
     [MEMORY, TGT], {"tgt_mask": CAUSAL_FLOAT, "src_key_padding_mask": MEMORY_PADDING,
                     "memory_key_padding_mask": MEMORY_PADDING}, ("train",)),
    ("Transformer-batch_first-norm_first-eval", lambda m: m.Transformer(
        E, HEADS, 1, 2, FF, batch_first=True, norm_first=True, activation="gelu"),
     [MEMORY.transpose(1, 0, 2), TGT.transpose(1, 0, 2)],
     {"src_mask": np.zeros((6, 6)), "tgt_mask": CAUSAL_BOOL, "memory_mask": ADDITIVE},
     ("eval",)),
    ("MultiheadAttention-add_bias_kv-add_zero_attn", lambda m: m.MultiheadAttention(
        E, HEADS, 0.0, True, True, True),
     [TGT, MEMORY, MEMORY], {"attn_mask": ADDITIVE, "key_padding_mask": MEMORY_PADDING},
     ("train",)),
    ("MultiheadAttention-add_bias_kv-kdim-batch_first", lambda m: m.MultiheadAttention(
        E, HEADS, add_bias_kv=True, kdim=3, vdim=4, batch_first=True),
     [TGT.transpose(1, 0, 2), R.standard_normal((2, 6, 3)), R.standard_normal((2, 6, 4))],
     {"attn_mask": CAUSAL_BOOL[:, :1].repeat(6, axis=1)}, ("train",)),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(case, dtype):
    name, make, arrays, masks, modes = case
    for mode in modes:
        _compare(make, arrays, masks, dtype, mode, name)


def test_every_transformer_class_is_compared():
    from pullback.nn.modules import transformer

    compared = {type(case[1](nn)).__name__ for case in CASES}
    classes = {n for n in transformer.__all__ if n[0].isupper()}
    assert classes - compared == {"TransformerBlock"}  # compared in test_attention.py


def test_generate_square_subsequent_mask_and_causal_detection():
    ours = nn.Transformer.generate_square_subsequent_mask(4, dtype="float64")
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == np.float32 or nn.Transformer.generate_square_subsequent_mask(2).dtype \
        == np.float32
    from pullback.nn.modules.transformer import _is_causal_mask

    assert _is_causal_mask(ours, None, 4)
    assert _is_causal_mask(pullback.tensor(np.triu(np.ones((4, 4), bool), 1)), None, 4)
    assert not _is_causal_mask(pullback.zeros(4, 4), None, 4)
    assert not _is_causal_mask(ours, None, 5)
    assert _is_causal_mask(None, True, 4) and not _is_causal_mask(ours, False, 4)


def test_encoder_layers_are_independent_deep_copies():
    layer = nn.TransformerEncoderLayer(E, HEADS, FF)
    encoder = nn.TransformerEncoder(layer, 3)
    weights = [m.linear1.weight for m in encoder.layers]
    assert len({id(w) for w in weights}) == 3 and all(w is not layer.linear1.weight
                                                      for w in weights)
    for w in weights:
        np.testing.assert_array_equal(w.detach().numpy(), layer.linear1.weight.detach().numpy())
    encoder(pullback.randn(4, 2, E)).sum().backward()
    assert layer.linear1.weight.grad is None and all(w.grad is not None for w in weights)
    assert len(list(copy.deepcopy(encoder).parameters())) == len(list(encoder.parameters()))


def test_defaults_and_errors_like_torch():
    # The default widths (512, 2048) cost seconds of initialization for nothing: test_layer_api
    # checks the defaults; here the default depths (6 + 6 layers) give the same state dict.
    ours = nn.Transformer(d_model=E, nhead=HEADS, dim_feedforward=FF)
    theirs = torch.nn.Transformer(d_model=E, nhead=HEADS, dim_feedforward=FF)
    assert (nn.Transformer.__init__.__defaults__[:2], ours.batch_first) == \
        (torch.nn.Transformer.__init__.__defaults__[:2], theirs.batch_first)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    layer = nn.TransformerEncoderLayer(E, HEADS)
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1
    assert layer.activation_relu_or_gelu == 1 and not layer.norm_first
    assert layer.norm1.eps == 1e-5
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(E, HEADS, activation="tanh")
    model = nn.Transformer(E, HEADS, 1, 1, FF)
    with pytest.raises(ShapeError, match="batch number"):
        model(pullback.randn(5, 2, E), pullback.randn(5, 3, E))
    with pytest.raises(ShapeError, match="d_model"):
        model(pullback.randn(5, 2, E), pullback.randn(5, 2, E + 1))
    mha = nn.MultiheadAttention(E, HEADS, 0.1, True, True, True, 3, 4, True)
    t_mha = torch.nn.MultiheadAttention(E, HEADS, 0.1, True, True, True, 3, 4, True)
    assert list(mha.state_dict()) == list(t_mha.state_dict())
    assert (mha.add_zero_attn, mha.kdim, mha.vdim, mha.batch_first) == \
        (t_mha.add_zero_attn, t_mha.kdim, t_mha.vdim, t_mha.batch_first)
