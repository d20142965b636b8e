"""Peak memory of a training step (solve + backward) with the adjoint against backpropagation
through the solver, for 10, 100, 1,000 and 10,000 solver steps: tracemalloc's peak (NumPy's
arrays and Python's objects), pullback only (PyTorch's CPU allocator is invisible to it).

The vector field is an MLP 2-64-64-2 (tanh) on a batch of 16 points, integrated over [0, 1] by
rk4 at step 1/N. The adjoint keeps the states at the output times only, so its peak should not
grow with N; backpropagation keeps every stage's activations until backward. The seed (miniGrad's
S.U.T.R.A.) claims the adjoint "consumes strictly O(1) memory regardless of integration depth":
each line prints that claim next to the measured growth of the adjoint's peak over its peak at
10 steps (a growth of 1.0 is the claim holding exactly).

    python benchmarks/sutra_memory.py [--out docs/sutra]   # JSON lines, memory.csv, memory.png
"""

from __future__ import annotations

import argparse
import csv
import functools
import os

from _common import emit, peak_memory
from _sutra_fields import MLP64

import pullback
from pullback.sutra import odeint, odeint_adjoint

STEPS = (10, 100, 1000, 10000)
SEED_CLAIM = "strictly O(1) memory regardless of integration depth"


def training_step(solve, field: MLP64, y0: pullback.Tensor, steps: int) -> None:
    field.zero_grad()
    y = solve(field, y0, pullback.tensor([0.0, 1.0]), method="rk4",
              options={"step_size": 1.0 / steps})
    (y[-1] ** 2).sum().backward()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join("docs", "sutra"))
    args = parser.parse_args()
    pullback.manual_seed(0)
    field, y0 = MLP64(), pullback.randn(16, 2)
    rows = []
    for steps in STEPS:
        peaks = {}
        for name, solve in (("adjoint", odeint_adjoint), ("backprop", odeint)):
            training_step(solve, field, y0, 10)  # warm caches before measuring
            peaks[name] = peak_memory(functools.partial(training_step, solve, field, y0, steps))
        rows.append({"steps": steps, "adjoint_peak_bytes": peaks["adjoint"],
                     "backprop_peak_bytes": peaks["backprop"]})
        emit(benchmark="sutra_memory_adjoint_vs_backprop", solver_steps=steps,
             adjoint_peak_mib=round(peaks["adjoint"] / 2 ** 20, 3),
             backprop_peak_mib=round(peaks["backprop"] / 2 ** 20, 3),
             backprop_over_adjoint=round(peaks["backprop"] / peaks["adjoint"], 1),
             adjoint_growth_vs_10_steps=round(peaks["adjoint"] / rows[0]["adjoint_peak_bytes"], 2),
             seed_claim=SEED_CLAIM)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "memory.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _plot(rows, os.path.join(args.out, "memory.png"))


def _plot(rows: list[dict], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["steps"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, [r["backprop_peak_bytes"] / 2 ** 20 for r in rows], "o-",
            label="backpropagation through the solver (odeint)")
    ax.plot(steps, [r["adjoint_peak_bytes"] / 2 ** 20 for r in rows], "s-",
            label="adjoint (odeint_adjoint)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rk4 steps over [0, 1]")
    ax.set_ylabel("peak memory of solve + backward (MiB, tracemalloc)")
    ax.set_title("pullback.sutra: MLP 2-64-64-2, batch 16")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
