"""A character-level LSTM language model on TinyShakespeare, written for PyTorch.

The text is TinyShakespeare (corpus_data's, from the copy pullback-gpt ships; or --data)."""

import argparse
import json
import math

import torch
import torch.nn as nn

import corpus_data

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=400)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--chars", type=int, default=300_000)
parser.add_argument("--data", default=None, help="a text file (default: TinyShakespeare)")
args = parser.parse_args()

torch.manual_seed(args.seed)
text = (open(args.data).read() if args.data else corpus_data.tinyshakespeare())[:args.chars]
vocab = sorted(set(text))
index = {c: i for i, c in enumerate(vocab)}
data = torch.LongTensor([index[c] for c in text])
split = int(0.9 * len(data))
train_data, val_data = data[:split], data[split:]
SEQ, BATCH = 64, 32


def batch(source):
    starts = torch.randint(len(source) - SEQ - 1, (BATCH,))
    x = torch.stack([source[s:s + SEQ] for s in starts.tolist()])
    y = torch.stack([source[s + 1:s + SEQ + 1] for s in starts.tolist()])
    return x, y


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, embed=48, hidden=128):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


model = CharLSTM(len(vocab))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()
for step in range(args.steps):
    x, y = batch(train_data)
    logits, _ = model(x)
    loss = criterion(logits.reshape(-1, len(vocab)), y.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 100 == 0:
        print(f"step {step}: train loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    losses = []
    for _ in range(10):
        x, y = batch(val_data)
        logits, _ = model(x)
        losses.append(criterion(logits.reshape(-1, len(vocab)), y.reshape(-1)).item())
val = sum(losses) / len(losses)
print(json.dumps({"val_loss": val, "val_perplexity": math.exp(val), "train_loss": loss.item()}))
