"""200 compiled training steps of the benchmark GPT (benchmarks/gpt_step.py's model and batch)
and of the MLP (benchmarks/nn_mlp.py's) against 200 eager steps: the largest relative difference
of the losses, against the tolerance (float32 1e-5, float64 1e-12).

    python benchmarks/compiler_correctness.py                    # float32, both models
    python benchmarks/compiler_correctness.py --dtype float64 --steps 200
"""

from __future__ import annotations

import argparse

import numpy as np

import pullback as pb
import pullback.compiler as pc
import pullback.nn.functional as F
import pullback.optim as optim
from _common import emit
from gpt_step import BATCH, CONFIG
from pullback import nn
from pullback.gpt import GPT

TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def gpt_run(dtype: str):
    pb.manual_seed(0)
    model = GPT(CONFIG).to(dtype)
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    rng = np.random.default_rng(0)
    batches = [tuple(pb.tensor(rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size)))
                     for _ in range(2)) for _ in range(8)]

    def step(x, y):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step, batches


def mlp_run(dtype: str):
    pb.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(dtype)
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    batches = [(pb.tensor(rng.standard_normal((128, 784)).astype(dtype)),
                pb.tensor(rng.integers(0, 10, 128))) for _ in range(8)]

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, batches


def compare(name: str, make, dtype: str, steps: int) -> None:
    eager_step, batches = make(dtype)
    compiled_step, _ = make(dtype)
    compiled = pc.compile(compiled_step, fullgraph=True)
    eager = np.array([eager_step(*batches[i % len(batches)]).item() for i in range(steps)])
    got = np.array([compiled(*batches[i % len(batches)]).item() for i in range(steps)])
    worst = float(np.max(np.abs(got - eager) / np.abs(eager)))
    emit(benchmark="compiler_correctness", model=name, dtype=dtype, steps=steps,
         max_relative_loss_difference=worst, tolerance=TOLERANCE[dtype],
         within_tolerance=worst <= TOLERANCE[dtype], first_loss=float(eager[0]),
         last_loss=float(eager[-1]), traces=compiled.traces)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtype", choices=sorted(TOLERANCE), default="float32")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--models", default="gpt,mlp")
    args = parser.parse_args()
    runs = {"gpt": gpt_run, "mlp": mlp_run}
    for name in args.models.split(","):
        compare(name, runs[name], args.dtype, args.steps)


if __name__ == "__main__":
    main()
