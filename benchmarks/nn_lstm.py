"""An LSTM language-model training step, pullback vs PyTorch CPU in one process.

The model and step of PyTorch's word_language_model example: Embedding(10000, 256), dropout 0.2,
a 2-layer LSTM 256 wide (dropout 0.2 between the layers), dropout, a Linear decoder to the
10,000 words; sequence 35, batch 20; the hidden state carried over and detached, log-softmax +
NLL loss, gradient clipping at 0.25 and plain SGD (lr 20). Target (issue 28): at most 1.5x
PyTorch's time. Also printed: the losses of both sides from identical weights with dropout off
(a parity check, float32), and the share of pullback's step spent in the recurrent op.

    python benchmarks/nn_lstm.py                          # 2 threads, wall clock (the target)
    python benchmarks/nn_lstm.py --threads 1 --clock cpu  # work per step, on a busy machine
    python benchmarks/nn_lstm.py --parts                  # also the step's parts, one by one
    python benchmarks/nn_lstm.py --kernels                # also nn's C kernels against NumPy's
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, emit, report, same_weights, time_pair, torch_module

import sys

import numpy as np

import pullback
import pullback.nn.functional as F
from pullback import nn, optim

TARGET = 1.5
VOCAB, WIDTH, LAYERS, STEPS, BATCH, DROPOUT = 10_000, 256, 2, 35, 20, 0.2


def word_language_model(m):
    """PyTorch's RNNModel (LSTM variant) written against ``m`` (torch.nn or pullback.nn)."""

    class RNNModel(m.Module):
        def __init__(self, dropout: float) -> None:
            super().__init__()
            self.drop = m.Dropout(dropout)
            self.encoder = m.Embedding(VOCAB, WIDTH)
            self.rnn = m.LSTM(WIDTH, WIDTH, LAYERS, dropout=dropout)
            self.decoder = m.Linear(WIDTH, VOCAB)

        def forward(self, tokens, hidden):
            emb = self.drop(self.encoder(tokens))
            output, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(self.drop(output)).reshape(-1, VOCAB)
            return decoded, hidden

    return RNNModel


def training_step(model, functional, clip, opt, tokens, targets, hidden):
    """One step; ``hidden`` is a one-element list holding the carried state."""

    def step():
        hidden[0] = tuple(h.detach() for h in hidden[0])
        opt.zero_grad()
        decoded, hidden[0] = model(tokens, hidden[0])
        loss = functional.nll_loss(functional.log_softmax(decoded, dim=1), targets)
        loss.backward()
        clip(model.parameters(), 0.25)
        opt.step()
        return loss

    return step


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    tokens_np = rng.integers(0, VOCAB, (STEPS, BATCH))
    targets_np = rng.integers(0, VOCAB, STEPS * BATCH)
    zeros = np.zeros((LAYERS, BATCH, WIDTH), dtype=np.float32)

    def build(dropout):
        torch.manual_seed(0)
        t_model = word_language_model(torch.nn)(dropout)
        p_model = word_language_model(nn)(dropout)
        same_weights(p_model, t_model)
        t_step = training_step(t_model, torch.nn.functional, torch.nn.utils.clip_grad_norm_,
                               torch.optim.SGD(t_model.parameters(), lr=20.0),
                               torch.from_numpy(tokens_np), torch.from_numpy(targets_np),
                               [(torch.from_numpy(zeros), torch.from_numpy(zeros))])
        p_step = training_step(p_model, F, optim.clip_grad_norm_,
                               optim.SGD(p_model.parameters(), lr=20.0),
                               pullback.tensor(tokens_np), pullback.tensor(targets_np),
                               [(pullback.tensor(zeros), pullback.tensor(zeros))])
        return p_step, t_step

    p_step, t_step = build(0.0)
    losses = [(float(p_step()), float(t_step())) for _ in range(3)]
    emit(benchmark="nn_lstm_parity", dropout=0.0,
         losses_pullback=[round(a, 6) for a, _ in losses],
         losses_torch=[round(b, 6) for _, b in losses],
         max_abs_difference=float(max(abs(a - b) for a, b in losses)))

    p_step, t_step = build(DROPOUT)
    ours, theirs = time_pair(p_step, t_step, warmup=3, repeats=5, block=5)
    report("nn_lstm_lm_step", ours, theirs, TARGET, layers=LAYERS, width=WIDTH, steps=STEPS,
           batch=BATCH, vocab=VOCAB, dropout=DROPOUT)
    emit(benchmark="nn_lstm_lm_step_breakdown", op="nn.recurrent_layer",
         **_recurrent_share(p_step), threads=OPTIONS.threads)


def _recurrent_share(step, repeats: int = 3) -> dict[str, float]:
    """The share of the step's op time (pullback.debug.profile, self times) in the recurrent
    layers' op, forward and backward (the profiler's own cost inflates the small ops a little,
    so this understates the recurrent share)."""
    with pullback.debug.profile() as prof:
        for _ in range(repeats):
            step()
    stats = prof.key_averages()
    total = sum(s.self_ns for s in stats)
    share = {}
    for s in stats:
        if s.name.startswith("nn.recurrent_layer"):
            share[f"{s.phase}_share"] = round(share.get(f"{s.phase}_share", 0.0)
                                              + s.self_ns / total, 3)
    return share


def _parts(torch) -> None:
    """The step's parts timed alone, each side from identical inputs (float32): the two LSTM
    layers, the log-softmax over the logits, the decoder, forward and backward; and one time
    step's hidden-state GEMM, which is where the BLAS libraries differ (NumPy's OpenBLAS,
    PyTorch's MKL)."""
    rng = np.random.default_rng(1)

    def pair(shape):
        a = rng.standard_normal(shape).astype(np.float32)
        return (pullback.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True))

    torch.manual_seed(0)
    t_lstm = torch.nn.LSTM(WIDTH, WIDTH, LAYERS)
    p_lstm = nn.LSTM(WIDTH, WIDTH, LAYERS)
    same_weights(p_lstm, t_lstm)
    p_seq, t_seq = pair((STEPS, BATCH, WIDTH))
    p_logits, t_logits = pair((STEPS * BATCH, VOCAB))
    p_w, t_w = pair((VOCAB, WIDTH))
    p_h, t_h = pair((STEPS * BATCH, WIDTH))
    small = rng.standard_normal((BATCH, WIDTH)).astype(np.float32)
    gates = rng.standard_normal((WIDTH, 4 * WIDTH)).astype(np.float32)
    t_small, t_gates = torch.from_numpy(small), torch.from_numpy(gates)
    parts = {
        "lstm_layers_forward_backward": (lambda: p_lstm(p_seq)[0].sum().backward(),
                                         lambda: t_lstm(t_seq)[0].sum().backward()),
        "log_softmax_forward_backward": (lambda: F.log_softmax(p_logits, dim=1).sum().backward(),
                                         lambda: t_logits.log_softmax(1).sum().backward()),
        "decoder_linear_forward_backward": (lambda: F.linear(p_h, p_w).sum().backward(),
                                            lambda: torch.nn.functional.linear(t_h, t_w).sum()
                                            .backward()),
        "hidden_gemm_one_time_step": (lambda: small @ gates, lambda: t_small @ t_gates),
    }
    for name, (ours_fn, theirs_fn) in parts.items():
        block = 200 if name.startswith("hidden") else 3
        ours, theirs = time_pair(ours_fn, theirs_fn, warmup=2, repeats=5, block=block)
        emit(benchmark=f"nn_lstm_part_{name}", pullback_ms=round(ours * 1e3, 4),
             torch_ms=round(theirs * 1e3, 4), ratio=round(ours / theirs, 3),
             threads=OPTIONS.threads, clock=OPTIONS.clock)


def _kernels() -> None:
    """pullback's C kernels of this step against the NumPy kernels they replace, on the same
    arrays in one process (pullback only): log-softmax over the logits and its backward, and one
    LSTM layer's forward and backward (the C step loop against the generic NumPy loop)."""
    from pullback.nn._ops import _native, _native_recurrent, recurrent, softmax

    rng = np.random.default_rng(2)
    logits = rng.standard_normal((STEPS * BATCH, VOCAB)).astype(np.float32)
    g = rng.standard_normal(logits.shape).astype(np.float32)
    y = _native.log_softmax(logits, axis=1)
    numpy_log_softmax = softmax._log_softmax_kernel(np).__wrapped__
    x = rng.standard_normal((STEPS, BATCH, WIDTH)).astype(np.float32)
    state = np.zeros((BATCH, WIDTH), np.float32)
    weights = [(rng.standard_normal(shape) * 0.06).astype(np.float32)
               for shape in ((4 * WIDTH, WIDTH), (4 * WIDTH, WIDTH), (4 * WIDTH,), (4 * WIDTH,))]
    inputs = (x, state, state, *weights, None)
    forward = recurrent._recurrent_layer_kernel(np)
    backward = recurrent._recurrent_layer_backward_kernel(np)
    out, saved = forward(*inputs, mode="LSTM")
    g_out = rng.standard_normal(out.shape).astype(np.float32)
    g_out[:STEPS, :, WIDTH:] = 0  # the layers return the cell state only at the end

    def generic(run):  # the same call with the C loops declining
        def call():
            kept = _native_recurrent.lstm_forward, _native_recurrent.lstm_backward
            _native_recurrent.lstm_forward = _native_recurrent.lstm_backward = \
                lambda *a, **k: NotImplemented
            try:
                run()
            finally:
                _native_recurrent.lstm_forward, _native_recurrent.lstm_backward = kept
        return call

    lstm_forward = lambda: forward(*inputs, mode="LSTM")  # noqa: E731
    lstm_backward = lambda: backward(g_out, out, *inputs, *saved, mode="LSTM")  # noqa: E731
    kernels = {
        "log_softmax_forward": (lambda: _native.log_softmax(logits, axis=1),
                                lambda: numpy_log_softmax(logits, axis=1)),
        "log_softmax_backward": (lambda: _native.log_softmax_backward(g, y, axis=1),
                                 lambda: g - np.exp(y) * g.sum(axis=1, keepdims=True)),
        "lstm_layer_forward": (lstm_forward, generic(lstm_forward)),
        "lstm_layer_backward": (lstm_backward, generic(lstm_backward)),
    }
    for name, (native_fn, numpy_fn) in kernels.items():
        ours, theirs = time_pair(native_fn, numpy_fn, warmup=2, repeats=5, block=3)
        emit(benchmark=f"nn_lstm_kernel_{name}", c_ms=round(ours * 1e3, 3),
             numpy_ms=round(theirs * 1e3, 3), ratio=round(ours / theirs, 3),
             threads=OPTIONS.threads, clock=OPTIONS.clock, order=OPTIONS.order)


if __name__ == "__main__":
    main()
    if "--parts" in sys.argv[1:]:
        _parts(torch_module())
    if "--kernels" in sys.argv[1:]:
        _kernels()
