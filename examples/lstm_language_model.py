"""Train a character-level LSTM language model on TinyShakespeare (next to the GPT).

The model is PyTorch's word_language_model written against ``pullback.nn`` (Embedding, a
2-layer ``nn.LSTM`` with dropout between the layers, a Linear decoder), trained on the GPT's
data split (``pullback.gpt.CharDataset``: the first 90 % of the text for training, the last
10 % for validation) with AdamW and gradient clipping. Each step is one fused
``nn.recurrent_layer`` op per layer, whose kernel runs the time loop. It prints the training
loss as it goes, then the validation loss over the whole validation split (every character
predicted once, in windows of the training length, nats per character, the unit of
``pullback-gpt eval --full``), the training time, and a short sample.

    python examples/lstm_language_model.py [--steps 2000] [--data DIR] [--out DIR] [--smoke]

--data is TinyShakespeare's folder or input.txt (default: the copy embedded in
pullback-gpt). Writes metrics.csv (step, train loss, validation estimate, seconds; the
whole split's loss in the last row), metrics.png and sample.txt to --out (default
runs/lstm_language_model/). Times are wall clock, with whatever
else the machine runs.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import pullback
import pullback.nn.functional as F
from pullback import nn, optim
from pullback.gpt import CharDataset, tinyshakespeare
from pullback.gpt.tokenizer import CharTokenizer

from _example import data_set, example_parser, output_dir
from _nn_example import plot, write_csv


class CharLSTM(nn.Module):
    """Embedding -> dropout -> LSTM (batch first) -> dropout -> Linear to the characters."""

    def __init__(self, vocab: int, width: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(vocab, width)
        self.rnn = nn.LSTM(width, width, layers, dropout=dropout, batch_first=True)
        self.decoder = nn.Linear(width, vocab)

    def forward(self, tokens, hidden=None):
        output, hidden = self.rnn(self.drop(self.encoder(tokens)), hidden)
        return self.decoder(self.drop(output)), hidden


def validation_loss(model: CharLSTM, data: CharDataset, seq: int, batch: int,
                    limit: int | None = None) -> float:
    """Mean cross-entropy (nats per character) over the validation split's consecutive
    windows (the first ``limit`` of them when given), in evaluation mode."""
    x, y = data.windows("val", seq)
    if limit is not None:
        x, y = x[:limit], y[:limit]
    model.eval()
    total = 0.0
    with pullback.no_grad():
        for i in range(0, len(x), batch):
            logits, _ = model(pullback.tensor(x[i:i + batch]))
            target = pullback.tensor(y[i:i + batch])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                                   reduction="sum")
            total += loss.item()
    model.train()
    return total / y.size


def sample(model: CharLSTM, tokenizer: CharTokenizer, prompt: str, length: int,
           rng: np.random.Generator) -> str:
    """``length`` characters drawn after ``prompt``, carrying the LSTM's state."""
    model.eval()
    ids = tokenizer.encode(prompt)
    with pullback.no_grad():
        logits, hidden = model(pullback.tensor(np.array([ids])))
        for _ in range(length):
            probs = np.asarray(F.softmax(logits[0, -1].double(), dim=-1))
            ids.append(int(rng.choice(len(probs), p=probs / probs.sum())))
            logits, hidden = model(pullback.tensor(np.array([[ids[-1]]])), hidden)
    model.train()
    return tokenizer.decode(ids)


def main(argv: list[str] | None = None) -> None:
    parser = example_parser(__doc__, __file__, data_help="TinyShakespeare's folder or input.txt "
                            "(default: the copy embedded in pullback-gpt)")
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args(argv)
    out = Path(output_dir(args.out))
    with data_set():
        text = tinyshakespeare(root=args.data).text
    tokenizer = CharTokenizer.from_text(text)
    data = CharDataset(np.asarray(tokenizer.encode(text), dtype=np.uint16))
    if args.smoke:
        width, layers, seq, batch, steps, every, val_limit = 32, 2, 32, 8, 12, 6, 8
    else:
        width, layers, seq, batch, steps, every, val_limit = 256, 2, 64, 32, args.steps, 100, 64
    pullback.manual_seed(0)
    model = CharLSTM(tokenizer.vocab_size, width, layers, dropout=0.2)
    opt = optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    rng = np.random.default_rng(0)
    rows, train_seconds = [], 0.0
    for step in range(1, steps + 1):
        x, y = data.batch("train", batch, seq, rng)
        start = time.perf_counter()
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        train_seconds += time.perf_counter() - start
        if step % every == 0 or step == steps:
            estimate = validation_loss(model, data, seq, 64, limit=val_limit)
            rows.append({"step": step, "train_loss": round(loss.item(), 5),
                         "val_first_windows": round(estimate, 5),
                         "train_seconds": round(train_seconds, 2), "val_full": ""})
            print(f"step {step:5d}  train loss {loss.item():.4f}  val (first {val_limit} "
                  f"windows) {estimate:.4f}  {train_seconds:.0f} s")
    val = validation_loss(model, data, seq, 64, limit=val_limit if args.smoke else None)
    print(f"validation loss {val:.4f} nats/char over "
          f"{'a few windows' if args.smoke else 'the whole validation split'}; "
          f"training {train_seconds:.1f} s for {steps} steps "
          f"({1e3 * train_seconds / steps:.0f} ms/step)")
    rows[-1]["val_full"] = round(val, 5)
    write_csv(str(out / "metrics.csv"), rows)
    plot(str(out / "metrics.png"), [r["step"] for r in rows],
         {"train loss (batch)": [r["train_loss"] for r in rows],
          f"validation (first {val_limit} windows)": [r["val_first_windows"] for r in rows]},
         "step", f"char LSTM on TinyShakespeare: validation {val:.3f} nats/char")
    text_out = sample(model, tokenizer, "ROMEO:", 40 if args.smoke else 400, rng)
    (out / "sample.txt").write_text(text_out + "\n", encoding="utf-8")
    print(text_out)
    print(f"wrote {out / 'metrics.csv'}, {out / 'metrics.png'} and {out / 'sample.txt'}")


if __name__ == "__main__":
    main()
