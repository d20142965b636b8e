"""A compiled MLP training step against pullback eager, PyTorch eager and torch.compile (CPU).

The model and batch of benchmarks/nn_mlp.py (784-256-256-10, batch 128, cross-entropy, SGD).
Compile times are reported apart.

    python benchmarks/compiler_mlp_step.py                           # 2 threads, wall clock
    python benchmarks/compiler_mlp_step.py --threads 1 --clock cpu   # busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, rng_batch, same_weights, torch_module  # isort: skip

import argparse

import pullback
import pullback.compiler as pc
import pullback.nn.functional as F
from _common import best_times, emit
from compiler_gpt_step import _clock, compile_seconds
from pullback import nn, optim


def mlp() -> nn.Module:
    """benchmarks/nn_mlp.py's model."""
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def mlp_training_step(model, opt):
    """zero_grad, cross-entropy, backward, step; returns the loss."""

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-torch-compile", action="store_true")
    args, _ = parser.parse_known_args()
    torch = torch_module()
    x_np, y_np = rng_batch((128, 784), 10)
    t_model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                  torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                  torch.nn.Linear(256, 10))
    t_opt = torch.optim.SGD(t_model.parameters(), lr=0.01)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def torch_step():
        t_opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(t_model(tx), ty)
        loss.backward()
        t_opt.step()
        return loss

    def pullback_step():
        model = mlp()
        same_weights(model, t_model)
        return mlp_training_step(model, optim.SGD(model.parameters(), lr=0.01))

    x, y = pullback.from_numpy(x_np), pullback.from_numpy(y_np)
    eager = pullback_step()
    compiled = pc.compile(pullback_step(), fullgraph=True)
    pb_compile_s = compile_seconds(lambda: compiled(x, y))
    sides = {"pullback_eager": lambda: eager(x, y), "pullback_compiled": lambda: compiled(x, y),
             "torch_eager": torch_step}
    torch_compile_s = None
    if not args.no_torch_compile:
        compiled_torch = torch.compile(torch_step)
        torch_compile_s = compile_seconds(compiled_torch)
        sides["torch_compile"] = compiled_torch
    times = dict(zip(sides, best_times(*sides.values(), rounds=args.rounds, repeat=20,
                                       clock=_clock())))
    entry = compiled.entries[-1]
    emit(benchmark="compiler_mlp_step", shape="784-256-256-10", batch=128,
         **{f"{k}_ms": round(v * 1e3, 3) for k, v in times.items()},
         compiled_vs_pullback_eager=round(times["pullback_compiled"] / times["pullback_eager"], 3),
         compiled_vs_torch_eager=round(times["pullback_compiled"] / times["torch_eager"], 3),
         torch_compile_vs_torch_eager=(round(times["torch_compile"] / times["torch_eager"], 3)
                                       if "torch_compile" in times else None),
         pullback_compile_s=round(pb_compile_s, 2), pullback_traces=compiled.traces,
         nodes_traced=len(entry.traced_graph.nodes), nodes_compiled=len(entry.graph.nodes),
         torch_compile_s=None if torch_compile_s is None else round(torch_compile_s, 2),
         threads=OPTIONS.threads, clock=OPTIONS.clock)


if __name__ == "__main__":
    main()
