"""time_sequence_prediction/generate_sine_wave.py of pytorch/examples, reproduced: N shifted
sine waves saved with ``torch.save`` as a NumPy array (``--length`` shortens them)."""

import argparse

import numpy as np
import torch

parser = argparse.ArgumentParser()
parser.add_argument('--length', type=int, default=1000)
parser.add_argument('--seed', type=int, default=2)
args = parser.parse_args()

np.random.seed(args.seed)
T, L, N = 20, args.length, 100
x = np.empty((N, L), 'int64')
x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype('float64')
torch.save(data, open('traindata.pt', 'wb'))
