"""nanoGPT's data/shakespeare_char/prepare.py (https://github.com/karpathy/nanoGPT),
reproduced: characters to ids, train.bin and val.bin (uint16, 90/10), and the vocabulary. The
text is corpus_data's (no download), written under ./data/shakespeare_char; the vocabulary
goes to meta.json instead of meta.pkl (no pickle in this repository)."""

import json
import os

import numpy as np

import corpus_data

folder = os.path.join('data', 'shakespeare_char')
os.makedirs(folder, exist_ok=True)
data = corpus_data.text()
print(f"length of dataset in characters: {len(data):,}")
chars = sorted(list(set(data)))
vocab_size = len(chars)
print(f"vocab size: {vocab_size:,}")
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}


def encode(s):
    return [stoi[c] for c in s]


n = len(data)
train_ids = np.array(encode(data[:int(n * 0.9)]), dtype=np.uint16)
val_ids = np.array(encode(data[int(n * 0.9):]), dtype=np.uint16)
print(f"train has {len(train_ids):,} tokens, val has {len(val_ids):,} tokens")
train_ids.tofile(os.path.join(folder, 'train.bin'))
val_ids.tofile(os.path.join(folder, 'val.bin'))
with open(os.path.join(folder, 'meta.json'), 'w') as f:
    json.dump({'vocab_size': vocab_size, 'itos': itos, 'stoi': stoi}, f)
