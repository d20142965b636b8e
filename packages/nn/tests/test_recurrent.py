"""RNN, LSTM and GRU (and their cells) against PyTorch with identical weights: outputs and final
states, gradients of the input, the initial state and every parameter, float64 (to 1e-10) and
float32, over layers, directions, projections, batch_first, bias, dropout (train and eval),
padded and packed sequences; the packing utilities; second derivatives by finite differences.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.errors import DTypeError, ShapeError
from pullback.nn.utils import rnn as prnn

from nn_helpers import assert_close, copy_torch_weights, gradchecks

torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of these tests")
trnn = torch.nn.utils.rnn

LAYERS = {
    "LSTM": lambda m, **kw: m.LSTM(3, 5, **kw),
    "GRU": lambda m, **kw: m.GRU(3, 5, **kw),
    "RNN-tanh": lambda m, **kw: m.RNN(3, 5, **kw),
    "RNN-relu": lambda m, **kw: m.RNN(3, 5, nonlinearity="relu", **kw),
}
OPTIONS = {
    "default": {},
    "2-layers-bidirectional": {"num_layers": 2, "bidirectional": True},
    "batch_first-nobias": {"batch_first": True, "bias": False},
    "3-layers-dropout-eval": {"num_layers": 3, "dropout": 0.5},
}
CASES = [(layer, option) for layer in LAYERS for option in OPTIONS] + [
    ("LSTM", "proj_size"), ("LSTM", "proj_size-2-layers-bidirectional")]
PROJECTIONS = {"proj_size": {"proj_size": 2},
               "proj_size-2-layers-bidirectional": {"proj_size": 3, "num_layers": 2,
                                                    "bidirectional": True}}


def _pair(layer: str, options: dict, dtype: str):
    ours, theirs = LAYERS[layer](nn, **options), LAYERS[layer](torch.nn, **options)
    theirs = theirs.to(getattr(torch, dtype))
    ours.to(dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict()), "state_dict keys differ"
    copy_torch_weights(ours, theirs)
    if options.get("dropout"):
        ours.eval()
        theirs.eval()
    return ours, theirs


def _state_shapes(module, batch: int) -> list[tuple[int, ...]]:
    layers = module.num_layers * (2 if module.bidirectional else 1)
    shapes = [(layers, batch, module.proj_size or module.hidden_size)]
    if module.mode == "LSTM":
        shapes.append((layers, batch, module.hidden_size))
    return shapes


def _flat(result) -> list:
    """``(output, h_n)`` or ``(output, (h_n, c_n))`` as a list of tensors."""
    output, state = result
    if isinstance(output, (prnn.PackedSequence, trnn.PackedSequence)):
        output = output.data
    return [output] + (list(state) if isinstance(state, tuple) else [state])


def _compare(ours, theirs, x: np.ndarray, states: list[np.ndarray] | None, dtype: str,
             what: str, pack=None) -> None:
    """Forward both (optionally packing the input with ``pack(framework, x)``), then compare
    every output, and the gradients of a random weighting of all outputs."""
    rng = np.random.default_rng(1)
    px = pullback.tensor(x, dtype=dtype, requires_grad=True)
    tx = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    p_states = t_states = None
    if states is not None:
        p_states = [pullback.tensor(s, dtype=dtype, requires_grad=True) for s in states]
        t_states = [torch.tensor(s, dtype=getattr(torch, dtype), requires_grad=True)
                    for s in states]
    p_in, t_in = (px, tx) if pack is None else (pack(prnn, px), pack(trnn, tx))

    def call(module, inp, st):
        if st is None:
            return module(inp)
        return module(inp, tuple(st) if len(st) == 2 else st[0])

    ours_out, theirs_out = _flat(call(ours, p_in, p_states)), _flat(call(theirs, t_in, t_states))
    p_loss = t_loss = 0
    for i, (a, b) in enumerate(zip(ours_out, theirs_out)):
        assert tuple(a.shape) == tuple(b.shape), f"{what}: output {i} shapes differ"
        assert_close(a, b, dtype, f"{what}: output {i}")
        w = rng.standard_normal(tuple(b.shape))
        p_loss = p_loss + (a * pullback.tensor(w, dtype=dtype)).sum()
        t_loss = t_loss + (b * torch.tensor(w, dtype=getattr(torch, dtype))).sum()
    p_loss.backward()
    t_loss.backward()
    assert_close(px.grad, tx.grad, dtype, f"{what}: input gradient")
    for p, t in zip(p_states or [], t_states or []):
        assert_close(p.grad, t.grad, dtype, f"{what}: initial state gradient")
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, t_params[name].grad, dtype, f"{what}: gradient of {name}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layer,option", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_layer_matches_torch(layer, option, dtype):
    options = PROJECTIONS.get(option) or OPTIONS[option]
    ours, theirs = _pair(layer, options, dtype)
    rng = np.random.default_rng(0)
    shape = (2, 6, 3) if options.get("batch_first") else (6, 2, 3)
    x = rng.standard_normal(shape)
    _compare(ours, theirs, x, None, dtype, f"{layer}-{option} zero state")
    states = [rng.standard_normal(s) for s in _state_shapes(ours, 2)]
    _compare(ours, theirs, x, states, dtype, f"{layer}-{option} given state")


@pytest.mark.parametrize("layer", list(LAYERS))
def test_packed_sequences_match_torch(layer):
    """Unsorted lengths, a state given, both directions: outputs, final states and gradients."""
    options = {"num_layers": 2, "bidirectional": True}
    if layer == "LSTM":
        options["proj_size"] = 2
    ours, theirs = _pair(layer, options, "float64")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4, 3))
    lengths = [3, 5, 1, 4]

    def pack(utils, t):
        return utils.pack_padded_sequence(t, lengths, enforce_sorted=False)

    states = [rng.standard_normal(s) for s in _state_shapes(ours, 4)]
    _compare(ours, theirs, x, states, "float64", f"{layer} packed", pack=pack)
    _compare(ours, theirs, x, None, "float64", f"{layer} packed, zero state", pack=pack)


def test_packed_output_unpacks_like_torch():
    ours, theirs = _pair("GRU", {"batch_first": True}, "float64")
    x = np.random.default_rng(0).standard_normal((3, 4, 3))
    lengths = [4, 2, 3]
    p_out, _ = ours(prnn.pack_padded_sequence(pullback.tensor(x), lengths, batch_first=True,
                                              enforce_sorted=False))
    t_out, _ = theirs(trnn.pack_padded_sequence(torch.tensor(x), lengths, batch_first=True,
                                                enforce_sorted=False))
    assert isinstance(p_out, prnn.PackedSequence)
    for name in ("batch_sizes", "sorted_indices", "unsorted_indices"):
        np.testing.assert_array_equal(getattr(p_out, name).numpy(), getattr(t_out, name).numpy())
    p_pad, p_len = prnn.pad_packed_sequence(p_out, batch_first=True, padding_value=-2.0,
                                            total_length=6)
    t_pad, t_len = trnn.pad_packed_sequence(t_out, batch_first=True, padding_value=-2.0,
                                            total_length=6)
    assert_close(p_pad, t_pad)
    np.testing.assert_array_equal(p_len.numpy(), t_len.numpy())


def test_dropout_between_layers_in_training():
    """Training-mode dropout falls between layers (not after the last): the 2-layer LSTM equals
    its two layers run apart with F.dropout drawn from the same seed in between."""
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5).double()
    first, second = nn.LSTM(3, 4).double(), nn.LSTM(4, 4).double()
    state = lstm.state_dict()
    first.load_state_dict({k: v for k, v in state.items() if "_l0" in k})
    second.load_state_dict({k.replace("_l1", "_l0"): v for k, v in state.items() if "_l1" in k})
    x = pullback.tensor(np.random.default_rng(0).standard_normal((5, 2, 3)))
    pullback.manual_seed(7)
    out, (h_n, _) = lstm(x)
    pullback.manual_seed(7)
    middle, (h_first, _) = first(x)
    expected, (h_second, _) = second(nn.functional.dropout(middle, 0.5, True))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(h_n.detach().numpy()[1], h_second.detach().numpy()[0], atol=1e-12)
    lstm.eval()
    eval_out, _ = lstm(x)
    assert not np.allclose(eval_out.detach().numpy(), out.detach().numpy())


def test_unbatched_input_matches_torch():
    for layer in LAYERS:
        ours, theirs = _pair(layer, {"bidirectional": True}, "float64")
        x = np.random.default_rng(0).standard_normal((4, 3))
        p_out, t_out = _flat(ours(pullback.tensor(x))), _flat(theirs(torch.tensor(x)))
        for a, b in zip(p_out, t_out):
            assert tuple(a.shape) == tuple(b.shape)
            assert_close(a, b, what=f"{layer} unbatched")


CELLS = {
    "RNNCell": lambda m: m.RNNCell(3, 4),
    "RNNCell-relu-nobias": lambda m: m.RNNCell(3, 4, bias=False, nonlinearity="relu"),
    "LSTMCell": lambda m: m.LSTMCell(3, 4),
    "GRUCell": lambda m: m.GRUCell(3, 4),
    "GRUCell-nobias": lambda m: m.GRUCell(3, 4, bias=False),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CELLS))
def test_cell_matches_torch(name, dtype):
    """Three steps of the cell, the state carried (given at step 0, or zeros), batched and
    unbatched."""
    rng = np.random.default_rng(0)
    ours, theirs = CELLS[name](nn), CELLS[name](torch.nn).to(getattr(torch, dtype))
    ours.to(dtype)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_torch_weights(ours, theirs)
    lstm = name.startswith("LSTM")
    for batch_shape in ((2,), ()):
        xs = rng.standard_normal((3,) + batch_shape + (3,))
        start = [rng.standard_normal(batch_shape + (4,)) for _ in range(2 if lstm else 1)]
        for given in (True, False):
            p_x = pullback.tensor(xs, dtype=dtype, requires_grad=True)
            t_x = torch.tensor(xs, dtype=getattr(torch, dtype), requires_grad=True)
            p_h = [pullback.tensor(s, dtype=dtype) for s in start] if given else None
            t_h = [torch.tensor(s, dtype=getattr(torch, dtype)) for s in start] if given else None
            p_loss = t_loss = 0
            for t in range(3):
                p_h = ours(p_x[t], None if p_h is None else (tuple(p_h) if lstm else p_h[0]))
                t_h = theirs(t_x[t], None if t_h is None else (tuple(t_h) if lstm else t_h[0]))
                p_h, t_h = (list(p_h), list(t_h)) if lstm else ([p_h], [t_h])
                for a, b in zip(p_h, t_h):
                    assert_close(a, b, dtype, f"{name} step {t}")
                    p_loss = p_loss + (a * a).sum()
                    t_loss = t_loss + (b * b).sum()
            p_loss.backward()
            t_loss.backward()
            assert_close(p_x.grad, t_x.grad, dtype, f"{name} input gradient")
            t_params = dict(theirs.named_parameters())
            for pname, p in ours.named_parameters():
                assert_close(p.grad, t_params[pname].grad, dtype, f"{name} grad of {pname}")
                p.grad = None
                t_params[pname].grad = None


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_second_derivatives_by_finite_differences(mode):
    """create_graph=True differentiates the replayed layer: gradgradcheck of one reversed,
    projected (LSTM) layer over sequences of different lengths."""
    from pullback.dispatch import apply
    from pullback.nn._ops.recurrent import RECURRENT_LAYER

    gradcheck, gradgradcheck = gradchecks()
    rng = np.random.default_rng(0)
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    hidden, width = 3, (2 if mode == "LSTM" else 3)

    def t(*shape):
        return pullback.tensor(rng.standard_normal(shape) * 0.5, requires_grad=True)

    x, h0 = t(4, 2, 2), t(2, width)
    c0 = t(2, hidden) if mode == "LSTM" else None
    w_ih, w_hh = t(gates * hidden, 2), t(gates * hidden, width)
    b_ih, b_hh = t(gates * hidden), t(gates * hidden)
    w_hr = t(width, hidden) if mode == "LSTM" else None
    inputs = [v for v in (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr) if v is not None]

    def layer(*args):
        it = iter(args)
        full = [next(it) if v is not None else None
                for v in (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)]
        return apply(RECURRENT_LAYER, *full, mode=mode, reverse=True, lengths=(4, 3))

    assert gradcheck(layer, inputs)
    assert gradgradcheck(layer, inputs)


def test_pack_pad_utilities_match_torch():
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 2)) for n in (2, 4, 3)]
    p_seqs = [pullback.tensor(s, requires_grad=True) for s in seqs]
    t_seqs = [torch.tensor(s, requires_grad=True) for s in seqs]
    for side in ("right", "left"):
        assert_close(prnn.pad_sequence(p_seqs, batch_first=True, padding_value=9.0,
                                       padding_side=side),
                     trnn.pad_sequence(t_seqs, batch_first=True, padding_value=9.0,
                                       padding_side=side))
    p_packed = prnn.pack_sequence(p_seqs, enforce_sorted=False)
    t_packed = trnn.pack_sequence(t_seqs, enforce_sorted=False)
    assert_close(p_packed.data, t_packed.data)
    np.testing.assert_array_equal(p_packed.batch_sizes.numpy(), t_packed.batch_sizes.numpy())
    for a, b in zip(prnn.unpack_sequence(p_packed), trnn.unpack_sequence(t_packed)):
        assert_close(a, b)
    weights = rng.standard_normal(tuple(t_packed.data.shape))
    (p_packed.data * pullback.tensor(weights)).sum().backward()
    (t_packed.data * torch.tensor(weights)).sum().backward()
    for a, b in zip(p_seqs, t_seqs):
        assert_close(a.grad, b.grad, what="gradient through packing")
    assert p_packed.double().data.dtype == np.float64
    with pytest.raises(ValueError, match="decrease"):
        prnn.pack_padded_sequence(pullback.zeros(3, 2), [1, 3])
    with pytest.raises(ValueError, match="positive"):
        prnn.pack_padded_sequence(pullback.zeros(3, 2), [3, 0])
    with pytest.raises(ValueError, match="total_length"):
        prnn.pad_packed_sequence(p_packed, total_length=2)


def test_every_recurrent_class_is_compared():
    from pullback.nn.modules import rnn

    compared = {type(make(nn)).__name__ for make in list(LAYERS.values()) + list(CELLS.values())}
    assert set(rnn.__all__) - compared == {"RNNBase", "RNNCellBase"}


def test_constructor_defaults_errors_and_helpers_like_torch():
    ours, theirs = nn.LSTM(3, 5, 2), torch.nn.LSTM(3, 5, 2)
    for name in ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout",
                 "bidirectional", "proj_size", "mode"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours._flat_weights_names == theirs._flat_weights_names
    assert [[p.shape for p in ws] for ws in ours.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in theirs.all_weights]
    bound = 1 / np.sqrt(5)
    assert all(np.abs(p.detach().numpy()).max() <= bound for p in ours.parameters())
    assert nn.RNN(3, 4, 2, "relu").nonlinearity == torch.nn.RNN(3, 4, 2, "relu").nonlinearity
    ours.flatten_parameters()
    for bad in (lambda m: m.LSTM(3, 5, proj_size=5), lambda m: m.GRU(3, 5, proj_size=2),
                lambda m: m.RNN(3, 5, nonlinearity="gelu"), lambda m: m.LSTM(3, 5, dropout=1.5),
                lambda m: m.LSTM(0, 5)):
        with pytest.raises(ValueError):
            bad(torch.nn)
        with pytest.raises(ValueError):
            bad(nn)
    with pytest.warns(UserWarning, match="dropout"):
        nn.LSTM(3, 5, dropout=0.2)
    with pytest.raises(TypeError):
        nn.LSTM(3, 5, bias=1)
    lstm = nn.LSTM(3, 5)
    with pytest.raises(ShapeError, match="input_size"):
        lstm(pullback.zeros(4, 2, 4))
    with pytest.raises(ShapeError, match="hidden size"):
        lstm(pullback.zeros(4, 2, 3), (pullback.zeros(1, 3, 5), pullback.zeros(1, 3, 5)))
    with pytest.raises(DTypeError, match="dtype"):
        lstm(pullback.zeros(4, 2, 3, dtype="float64"))
    clone = copy.deepcopy(lstm)
    assert list(clone.state_dict()) == list(lstm.state_dict())
    assert "LSTM(3, 5)" == repr(lstm) == repr(torch.nn.LSTM(3, 5))
