"""The LSTM layer's C time loops (``_native_recurrent`` over ``_csrc/recurrent.c``, float32):
against the generic NumPy loop of ``recurrent_cells`` (outputs, every saved buffer, every
gradient; either backward after either forward), against PyTorch at a language model's sizes
and with saturated gates, and the inputs they leave to the generic loop."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.nn._ops import _native_recurrent, recurrent

from nn_helpers import assert_close, copy_torch_weights

FORWARD = recurrent._recurrent_layer_kernel(np)
BACKWARD = recurrent._recurrent_layer_backward_kernel(np)


@pytest.fixture(scope="module")
def kernels():
    if _native_recurrent._kernel("lstm_forward_step_f32", 6, 1) is None:
        pytest.skip(f"native kernels unavailable: {pullback.native.status().get('nn_recurrent')}")


@pytest.fixture
def generic(monkeypatch):
    """Run the generic loops: the native entry points decline."""

    def use_generic():
        for name in ("lstm_forward", "lstm_backward"):
            monkeypatch.setattr(_native_recurrent, name, lambda *a, **k: NotImplemented)

    return use_generic


def _layer_inputs(rng, steps=7, batch=5, features=6, hidden=9, scale=0.4):
    def f32(*shape):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    x, h0, c0 = f32(steps, batch, features), f32(batch, hidden), f32(batch, hidden)
    weights = f32(4 * hidden, features), f32(4 * hidden, hidden), f32(4 * hidden), f32(
        4 * hidden)
    return (x, h0, c0, *weights, None)


def _run(inputs, reverse, g):
    out, saved = FORWARD(*inputs, mode="LSTM", reverse=reverse)
    grads = BACKWARD(g, out, *inputs, *saved, mode="LSTM", reverse=reverse)
    return out, saved, grads


@pytest.mark.parametrize("reverse", [False, True])
def test_native_loops_match_the_generic_loops(kernels, generic, reverse):
    rng = np.random.default_rng(0)
    inputs = _layer_inputs(rng)
    steps, batch, hidden = inputs[0].shape[0], inputs[0].shape[1], inputs[1].shape[1]
    g = rng.standard_normal((steps + 1, batch, 2 * hidden)).astype(np.float32)
    g[:steps, :, hidden:] = 0  # the layers return the cell state only at the end
    native_out, native_saved, native_grads = _run(inputs, reverse, g)
    cross = BACKWARD(g, native_out, *inputs, *native_saved, mode="LSTM", reverse=reverse)
    generic()
    out, saved, grads = _run(inputs, reverse, g)
    np.testing.assert_allclose(native_out, out, rtol=1e-5, atol=1e-6)
    for a, b in zip(native_saved, saved):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # the generic backward from the native forward's buffers, and the native one
    for got in (native_grads, cross):
        for a, b in zip(got, grads):  # None: the absent projection's gradient
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_entry_points_decline_what_they_do_not_cover(kernels):
    rng = np.random.default_rng(1)
    pre = rng.standard_normal((3, 2, 16)).astype(np.float32)
    h0 = np.zeros((2, 4), np.float32)
    w = np.zeros((4, 16), np.float32)
    assert _native_recurrent.lstm_forward(pre.astype(np.float64), h0, h0, w,
                                          reverse=False) is NotImplemented
    assert _native_recurrent.lstm_forward(pre[:, :, ::2], h0, h0, w[:, :8],
                                          reverse=False) is NotImplemented
    assert _native_recurrent.lstm_forward(pre, h0[:, :3], h0, w, reverse=False) is NotImplemented
    assert _native_recurrent.lstm_forward(pre[:0], h0, h0, w, reverse=False) is NotImplemented
    g = np.zeros((3, 2, 8), np.float32)  # not (T + 1, B, 2H)
    acts = np.zeros((3, 2, 16), np.float32)
    assert _native_recurrent.lstm_backward(g, acts, g[:, :, :4], g[:, :, :4], w.T,
                                           reverse=False) is NotImplemented


torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle of the tests below")


def _torch_pair(**options):
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(**options)
    ours = nn.LSTM(**options)
    copy_torch_weights(ours, theirs)
    return ours, theirs


@pytest.mark.parametrize("bidirectional", [False, True])
def test_language_model_sized_lstm_matches_torch_in_float32(kernels, bidirectional):
    """Two layers 256 wide over 35 steps of batch 20 (the word language model's LSTM)."""
    ours, theirs = _torch_pair(input_size=256, hidden_size=256, num_layers=2,
                               bidirectional=bidirectional)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((35, 20, 256)).astype(np.float32)
    px, tx = pullback.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (out, (h, c)), (t_out, (t_h, t_c)) = ours(px), theirs(tx)
    for a, b, what in ((out, t_out, "output"), (h, t_h, "h_n"), (c, t_c, "c_n")):
        assert_close(a, b, "float32", what)
    w = rng.standard_normal(tuple(t_out.shape)).astype(np.float32)
    ((out * pullback.tensor(w)).sum() + c.sum()).backward()
    ((t_out * torch.tensor(w)).sum() + t_c.sum()).backward()
    assert_close(px.grad, tx.grad, "float32", "input gradient")
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():  # sums over 700 rows
        assert_close(p.grad, t_params[name].grad, "float32", f"gradient of {name}", scale=10)


def test_saturated_gates_match_torch(kernels):
    """Pre-activations in the hundreds: sigmoids at exactly 0 or 1, tanh at +-1, and the
    derivatives through them zero, as in PyTorch."""
    ours, theirs = _torch_pair(input_size=8, hidden_size=64)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 4, 8)) * 200).astype(np.float32)
    x[0, 0, 0] = 0.0
    px, tx = pullback.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = ours(px)[0], theirs(tx)[0]
    assert_close(out, t_out, "float32", "output")
    out.sum().backward()
    t_out.sum().backward()
    assert_close(px.grad, tx.grad, "float32", "input gradient")
