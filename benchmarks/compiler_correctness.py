"""200 compiled training steps of the benchmark GPT (benchmarks/gpt_step.py's model and batch)
and of the MLP (benchmarks/nn_mlp.py's) against 200 eager steps: the largest relative difference
of the losses, against the tolerance (float32 1e-5, float64 1e-12).

    python benchmarks/compiler_correctness.py                    # float32, both models
    python benchmarks/compiler_correctness.py --dtype float64 --steps 200
    PULLBACK_GEMM=numpy python benchmarks/compiler_correctness.py   # NumPy's GEMMs (both sides)

Both sides run the process's GEMM provider (MKL where the mkl wheel is installed).
"""

from __future__ import annotations

import argparse

import numpy as np

import pullback as pb
import pullback.compiler as pc
import pullback.optim as optim
from _common import emit
from compiler_gpt_step import gpt_training_step
from compiler_mlp_step import mlp, mlp_training_step
from gpt_step import BATCH, CONFIG
from pullback.gpt import GPT

TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def gpt_run(dtype: str):
    pb.manual_seed(0)
    model = GPT(CONFIG).to(dtype)
    rng = np.random.default_rng(0)
    batches = [tuple(pb.tensor(rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size)))
                     for _ in range(2)) for _ in range(8)]
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    return gpt_training_step(model, opt), batches


def mlp_run(dtype: str):
    pb.manual_seed(0)
    model = mlp().to(dtype)
    rng = np.random.default_rng(0)
    batches = [(pb.tensor(rng.standard_normal((128, 784)).astype(dtype)),
                pb.tensor(rng.integers(0, 10, 128))) for _ in range(8)]
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return mlp_training_step(model, opt), batches


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
         last_loss=float(eager[-1]), traces=compiled.traces, gemm=compiled.gemm)


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
