"""A compiled GPT training step against pullback eager, PyTorch eager and torch.compile (CPU).

The model and batch of benchmarks/gpt_step.py (4 layers, width 128, batch 32, AdamW). Target:
the compiled step at most 0.9x PyTorch's eager step. Compile times (pullback.compiler: the
traced calls until the guards settle; torch.compile: its first calls) are reported apart, as
is the node count before and after each pass.

    python benchmarks/compiler_gpt_step.py                      # 2 threads, wall clock
    python benchmarks/compiler_gpt_step.py --threads 1 --clock cpu   # busy machine
    python benchmarks/compiler_gpt_step.py --no-torch-compile   # skip torch.compile (slow build)
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, torch_module  # isort: skip

import argparse
import time

import numpy as np

import pullback as pb
import pullback.compiler as pc
import pullback.optim as optim
from _common import best_times, emit
from gpt_step import BATCH, CONFIG  # the same model and batch (also puts torch_gpt on the path)
from pullback.gpt import GPT

TARGET = 0.9


def _clock():
    return time.process_time if OPTIONS.clock == "cpu" else time.perf_counter


def compile_seconds(step, calls: int = 3) -> float:
    """Wall time of the first ``calls`` calls (tracing, building: the C compiler runs in other
    processes, which CPU time would not count), minus as many steady steps."""
    start = time.perf_counter()
    for _ in range(calls):
        step()
    first = time.perf_counter() - start
    start = time.perf_counter()
    step()
    return max(first - calls * (time.perf_counter() - start), 0.0)


def gpt_training_step(model, opt):
    """The step of benchmarks/gpt_step.py: loss, zero_grad, backward, AdamW; returns the loss."""

    def step(x, y):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of 10 steps")
    parser.add_argument("--no-torch-compile", action="store_true")
    args, _ = parser.parse_known_args()
    torch = torch_module()
    from torch_gpt import torch_twin

    rng = np.random.default_rng(0)
    x_np = rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size))
    y_np = rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size))
    x, y = pb.tensor(x_np), pb.tensor(y_np)

    pb.manual_seed(0)
    eager_model = GPT(CONFIG)
    eager = gpt_training_step(eager_model, optim.AdamW(eager_model.parameters(), lr=1e-3,
                                                   weight_decay=0.1))
    pb.manual_seed(0)
    model = GPT(CONFIG)
    compiled = pc.compile(gpt_training_step(model, optim.AdamW(model.parameters(), lr=1e-3,
                                                           weight_decay=0.1)), fullgraph=True)
    pb_compile_s = compile_seconds(lambda: compiled(x, y))
    entry = compiled.entries[-1]
    for record in entry.report:
        emit(benchmark="compiler_gpt_step_passes", **record)

    twin = torch_twin(eager_model)
    topt = torch.optim.AdamW(twin.parameters(), lr=1e-3, weight_decay=0.1, foreach=True)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def torch_step():
        loss = twin(tx, ty)
        topt.zero_grad()
        loss.backward()
        topt.step()
        return loss

    sides = {"pullback_eager": lambda: eager(x, y), "pullback_compiled": lambda: compiled(x, y),
             "torch_eager": torch_step}
    torch_compile_s = None
    if not args.no_torch_compile:
        compiled_torch = torch.compile(torch_step)
        torch_compile_s = compile_seconds(compiled_torch)
        sides["torch_compile"] = compiled_torch
    times = dict(zip(sides, best_times(*sides.values(), rounds=args.rounds, clock=_clock())))
    record = {f"{k}_ms": round(v * 1e3, 2) for k, v in times.items()}
    ratio = times["pullback_compiled"] / times["torch_eager"]
    emit(benchmark="compiler_gpt_step", batch=BATCH, config=CONFIG.to_dict(), **record,
         compiled_vs_torch_eager=round(ratio, 3), target=TARGET, meets_target=ratio <= TARGET,
         compiled_vs_pullback_eager=round(times["pullback_compiled"] / times["pullback_eager"], 3),
         torch_compile_vs_torch_eager=(round(times["torch_compile"] / times["torch_eager"], 3)
                                       if "torch_compile" in times else None),
         pullback_compile_s=round(pb_compile_s, 2),
         pullback_trace_s=round(sum(e.times["trace_s"] for e in compiled.entries), 2),
         pullback_traces=compiled.traces, nodes_traced=len(entry.traced_graph.nodes),
         nodes_compiled=len(entry.graph.nodes),
         torch_compile_s=None if torch_compile_s is None else round(torch_compile_s, 2),
         threads=OPTIONS.threads, clock=OPTIONS.clock)


if __name__ == "__main__":
    main()
