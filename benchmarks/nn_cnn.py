"""LeNet-like CNN (conv 1->8 3x3, max-pool 2, conv 8->16 3x3, max-pool 2, linear 400->10), batch
64, one SGD step: pullback vs PyTorch CPU (2 threads) in one process. Target (issue 41): at most
1.1x (eager_targets.py times it in separate processes).

    python benchmarks/nn_cnn.py                          # 2 threads, wall clock (the target)
    python benchmarks/nn_cnn.py --threads 1 --clock cpu  # work per step, on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import report, rng_batch, same_weights, time_pair, torch_module

import pullback
import pullback.nn.functional as F
from pullback import nn, optim

TARGET = 1.1


def build(mod):
    """The same architecture from ``torch.nn`` or ``pullback.nn`` (28x28 -> 26 -> 13 -> 11 -> 5)."""
    return mod.Sequential(mod.Conv2d(1, 8, 3), mod.ReLU(), mod.MaxPool2d(2),
                          mod.Conv2d(8, 16, 3), mod.ReLU(), mod.MaxPool2d(2),
                          mod.Flatten(), mod.Linear(400, 10))


def main() -> None:
    torch = torch_module()
    x_np, y_np = rng_batch((64, 1, 28, 28), 10)
    t_model = build(torch.nn)
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.01)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def torch_step():
        t_opt.zero_grad()
        torch.nn.functional.cross_entropy(t_model(tx), ty).backward()
        t_opt.step()

    model = build(nn)
    same_weights(model, t_model)
    opt = optim.SGD(model.parameters(), lr=0.01)
    x, y = pullback.from_numpy(x_np), pullback.from_numpy(y_np)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    ours, theirs = time_pair(step, torch_step)
    report("nn_cnn_sgd_step", ours, theirs, TARGET, model="lenet-like", batch=64)


if __name__ == "__main__":
    main()
