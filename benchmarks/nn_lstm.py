"""An LSTM language-model training step, pullback vs PyTorch CPU in one process.

The model and step of PyTorch's word_language_model example: Embedding(10000, 256), dropout 0.2,
a 2-layer LSTM 256 wide (dropout 0.2 between the layers), dropout, a Linear decoder to the
10,000 words; sequence 35, batch 20; the hidden state carried over and detached, log-softmax +
NLL loss, gradient clipping at 0.25 and plain SGD (lr 20). Target (issue 28): at most 1.5x
PyTorch's time. Also printed: the losses of both sides from identical weights with dropout off
(a parity check, float32), and the share of pullback's step spent in the recurrent op.

    python benchmarks/nn_lstm.py                          # 2 threads, wall clock (the target)
    python benchmarks/nn_lstm.py --threads 1 --clock cpu  # work per step, on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, emit, report, same_weights, time_pair, torch_module

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


if __name__ == "__main__":
    main()
