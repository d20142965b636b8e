"""MLP 784-256-256-10, batch 128, one SGD step (forward, cross-entropy, backward, update):
pullback vs PyTorch CPU (2 threads) in one process. Target (issue 41): at most 1.1x PyTorch's time
(eager_targets.py times it in separate processes).

    python benchmarks/nn_mlp.py                          # 2 threads, wall clock (the target)
    python benchmarks/nn_mlp.py --threads 1 --clock cpu  # work per step, on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import report, rng_batch, same_weights, time_pair, torch_module

import pullback
import pullback.nn.functional as F
from pullback import nn, optim

TARGET = 1.1


def main() -> None:
    torch = torch_module()
    x_np, y_np = rng_batch((128, 784), 10)

    t_model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                  torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                  torch.nn.Linear(256, 10))
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.01)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def torch_step():
        t_opt.zero_grad()
        torch.nn.functional.cross_entropy(t_model(tx), ty).backward()
        t_opt.step()

    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    same_weights(model, t_model)
    opt = optim.SGD(model.parameters(), lr=0.01)
    x, y = pullback.from_numpy(x_np), pullback.from_numpy(y_np)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    ours, theirs = time_pair(step, torch_step, block=20)
    report("nn_mlp_sgd_step", ours, theirs, TARGET, shape="784-256-256-10", batch=128)


if __name__ == "__main__":
    main()
