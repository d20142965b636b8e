"""Issue 41's table: each eager step (and batch-1 inference, and the compiled GPT step) timed for
pullback and for PyTorch 2.13 CPU in processes of their own, alternating, with its target.

In one process the two frameworks slow each other (threads that spin after their work: PyTorch's
mnist step took 40 ms alone and 75-106 ms next to pullback), so every side of every case runs in
a fresh process; the rounds alternate which side goes first, and each side keeps its best block
over all rounds (a slow spell of a shared machine then costs both alike). Prints one JSON line per
case (both times, the ratio pullback / PyTorch of the bests, which the target is checked on, and
the median over rounds of each round's own ratio, the target, whether it is met) and writes them to
``--csv`` (by default ``docs/eager_targets.csv`` when every case ran, so that a partial run does
not replace the docs' table), with the CPU model, the thread count and the GEMM provider pullback
ran.

    python benchmarks/eager_targets.py                        # every case, 3 rounds, 2 threads
    python benchmarks/eager_targets.py --cases mlp_step lenet_step --rounds 5
    python benchmarks/eager_targets.py --clock cpu            # process CPU time (busy machine)

The workloads are in ``_eager_cases.py``. ``--clock cpu`` counts every thread's CPU time, spin
included; with ``--threads 1`` it is the work each side does.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import best_per_call, emit, gemm_provider, round_ratios, write_csv

HERE = Path(__file__).resolve().parent
SIDES = ("pullback", "torch")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def time_one_side(case: str, side: str, clock: str, blocks: int, warmup: float) -> dict:
    """In this process: build ``case`` for ``side``, warm it up (at least five steps and
    ``warmup`` seconds: a compiled step traces and builds in its first calls), then the best of
    ``blocks`` blocks of steps (each block about 0.2 s) per step."""
    from _eager_cases import CASES

    if side == "torch":
        import torch

        torch.set_num_threads(int(os.environ["PULLBACK_NUM_THREADS"]))
    step = CASES[case].builder(side)
    now = time.process_time if clock == "cpu" else time.perf_counter
    start = time.perf_counter()
    for _ in range(5):
        step()
    while time.perf_counter() - start < warmup:
        step()
    t0 = time.perf_counter()
    step()
    calls = max(1, int(0.2 / max(time.perf_counter() - t0, 1e-6)))
    best = best_per_call(step, calls, blocks, clock=now)
    record = {"case": case, "side": side, "ms": best * 1e3, "calls_per_block": calls}
    if side != "torch":
        record["gemm"] = gemm_provider()
    return record


def run_side(case: str, side: str, args: argparse.Namespace) -> dict:
    env = dict(os.environ)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                "PULLBACK_NUM_THREADS"):
        env[var] = str(args.threads)
    if side == "torch":
        # PyTorch's process builds its model from pullback's (the same weights), which would
        # apply pullback's process-wide malloc settings (pullback._host_memory) to PyTorch's
        # arrays too: the reference runs with glibc's defaults, as PyTorch does without pullback
        # (docs/benchmarks.md, seventh round, has what the settings did to PyTorch's steps).
        env["PULLBACK_MALLOC_TUNING"] = "0"
    command = [sys.executable, str(HERE / "eager_targets.py"), "--child", case, side,
               "--clock", args.clock, "--blocks", str(args.blocks), "--warmup", str(args.warmup)]
    done = subprocess.run(command, env=env, cwd=HERE, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{case} ({side}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    from _eager_cases import CASES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--blocks", type=int, default=7, help="timed blocks per process")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of warm-up steps")
    parser.add_argument("--csv", default=None,
                        help="where to write the rows (default: docs/eager_targets.csv, the "
                             "docs' table, for a run of every case; no file for fewer cases)")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(time_one_side(*args.child, args.clock, args.blocks, args.warmup)))
        return

    rows = []
    for case in args.cases:
        ours = "compiled" if case.endswith("_compiled") else "pullback"
        best: dict[str, float] = {}
        runs: dict[str, list[float]] = {ours: [], "torch": []}
        gemm = None
        for r in range(args.rounds):
            order = (ours, "torch") if r % 2 == 0 else ("torch", ours)
            for side in order:
                record = run_side(case, side, args)
                runs[side].append(round(record["ms"], 3))
                best[side] = min(best.get(side, float("inf")), record["ms"])
                gemm = record.get("gemm", gemm)
        ratio = best[ours] / best["torch"]
        # Each round's two processes ran one after the other: the median of the rounds' own
        # ratios is a check on the ratio of the bests.
        paired = statistics.median(round_ratios(runs[ours], runs["torch"]))
        row = dict(benchmark="eager_target", case=case, what=CASES[case].what,
                   pullback_ms=round(best[ours], 3), torch_ms=round(best["torch"], 3),
                   ratio=round(ratio, 3), median_round_ratio=round(paired, 3),
                   target=CASES[case].target,
                   meets_target=ratio <= CASES[case].target, pullback_runs_ms=runs[ours],
                   torch_runs_ms=runs["torch"], threads=args.threads, clock=args.clock,
                   gemm=gemm, cpu=_cpu_model())
        emit(**row)
        rows.append(row)
    if args.csv is None and set(args.cases) == set(CASES):
        args.csv = str(HERE.parent / "docs" / "eager_targets.csv")
    if args.csv:
        write_csv(args.csv, [{k: (" ".join(map(str, v)) if isinstance(v, list) else v)
                              for k, v in row.items()} for row in rows])


if __name__ == "__main__":
    main()
