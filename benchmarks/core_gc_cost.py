"""What Python's cyclic garbage collector costs the 1,000-op chain (``core_overhead.py``'s
workload), for pullback and for PyTorch, each side in a process of its own.

pullback records each op as Python objects that the collector tracks (the graph Node, its
edges, its tuple of input arrays, for ops that save their inputs the saved versions), alive
until the backward; until 2d5584c the Node also kept its input Tensors, and with them every
intermediate Tensor and its version counter (6.3 tracked objects per op, now 3.5). Their
allocations start the collector's young collections, whose survivors start full ones over every
object of the process. PyTorch keeps its graph in C++, out of the collector's sight. This script
times the step with the collector on and off, adds up the collector's own time per step
(``gc.callbacks``) and the collections of each generation, and counts the tracked objects the
forward leaves alive per op, for both frameworks, alternating the sides' processes.

    python benchmarks/core_gc_cost.py            # 3 rounds, 2 threads, wall clock
    python benchmarks/core_gc_cost.py --rounds 5

Each side prints one JSON line per round: the step with the collector on and off (best block),
the collector's milliseconds per step and the collections per step of generations 0, 1 and 2.
The summary line gives, per side, the medians over the rounds and the share of the step that
is the collector's.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _common import best_per_call, emit

HERE = Path(__file__).resolve().parent
SIDES = ("pullback", "torch")


def _step(side: str):
    """core_overhead.py's step (a fresh leaf pair, the chain, backward) for ``side``."""
    if side == "torch":
        import torch as framework
    else:
        import pullback as framework  # type: ignore[no-redef]
    framework.set_num_threads(2)
    from core_overhead import chain

    rng = np.random.default_rng(0)
    x0 = rng.standard_normal(8).astype(np.float32)
    w0 = rng.standard_normal(8).astype(np.float32)

    def step() -> None:
        x = framework.tensor(x0, requires_grad=True)
        w = framework.tensor(w0, requires_grad=True)
        chain(x, w).backward()

    return step


def _tracked_per_op(side: str) -> float:
    """The tracked objects that the chain's forward leaves alive until its backward, per op."""
    if side == "torch":
        import torch as framework
    else:
        import pullback as framework  # type: ignore[no-redef]
    from core_overhead import N_OPS, chain

    x = framework.tensor(np.ones(8, np.float32), requires_grad=True)
    w = framework.tensor(np.ones(8, np.float32), requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        alive = len(gc.get_objects())
        loss = chain(x, w)
        alive = len(gc.get_objects()) - alive
    finally:
        gc.enable()
    loss.backward()
    return alive / N_OPS


def measure(side: str) -> dict:
    """In this process: the step with the collector on and off, and the collector's work."""
    step = _step(side)
    for _ in range(20):
        step()
    on_ms = best_per_call(step, calls=60, runs=7) * 1e3
    gc.disable()
    try:
        off_ms = best_per_call(step, calls=60, runs=7) * 1e3
    finally:
        gc.enable()
    spent = [0.0]
    started = [0.0]

    def timer(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        else:
            spent[0] += time.perf_counter() - started[0]

    steps = 300
    per_op = _tracked_per_op(side)
    before = [s["collections"] for s in gc.get_stats()]
    gc.callbacks.append(timer)
    try:
        for _ in range(steps):
            step()
    finally:
        gc.callbacks.remove(timer)
    after = [s["collections"] for s in gc.get_stats()]
    return {"side": side, "step_gc_on_ms": round(on_ms, 3), "step_gc_off_ms": round(off_ms, 3),
            "gc_ms_per_step": round(spent[0] / steps * 1e3, 3),
            "collections_per_step": [round((b - a) / steps, 3) for a, b in zip(before, after)],
            "tracked_per_op": round(per_op, 2),
            "tracked_objects": len(gc.get_objects())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child)), flush=True)
        return
    results: dict[str, list[dict]] = {side: [] for side in SIDES}
    for r in range(args.rounds):
        for side in SIDES if r % 2 == 0 else SIDES[::-1]:
            run = subprocess.run([sys.executable, __file__, "--child", side], check=True,
                                 capture_output=True, text=True, cwd=HERE)
            record = json.loads(run.stdout.strip().splitlines()[-1])
            results[side].append(record)
            emit(benchmark="core_gc_cost_round", round=r, **record)
    summary = {}
    for side, records in results.items():
        on = statistics.median(r["step_gc_on_ms"] for r in records)
        off = statistics.median(r["step_gc_off_ms"] for r in records)
        collector = statistics.median(r["gc_ms_per_step"] for r in records)
        summary[side] = {"step_gc_on_ms": on, "step_gc_off_ms": off, "gc_ms_per_step": collector,
                         "gc_share": round(collector / on, 3),
                         "tracked_per_op": statistics.median(r["tracked_per_op"]
                                                             for r in records)}
    emit(benchmark="core_gc_cost", **summary,
         ratio_gc_on=round(summary["pullback"]["step_gc_on_ms"]
                           / summary["torch"]["step_gc_on_ms"], 3),
         ratio_gc_off=round(summary["pullback"]["step_gc_off_ms"]
                            / summary["torch"]["step_gc_off_ms"], 3))


if __name__ == "__main__":
    main()
