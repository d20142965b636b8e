"""Do pullback's idle worker threads spin? CPU time the process burns while its main thread
sleeps right after a training step, with each GEMM provider (a process each).

Worker threads that keep spinning after their work slow whatever runs next on the machine,
another framework in the same process included (issue 41: PyTorch's mnist step took 40 ms alone
and 75-106 ms in one process with pullback). pullback's C thread pool spins 0.2 ms after a job,
then sleeps on a condition variable (``_csrc/pool.c``); OpenBLAS's threads (NumPy's products,
``PULLBACK_GEMM=numpy``) spin far longer. Prints one JSON line per provider and step: the CPU
milliseconds burnt during sleeps of 1, 10 and 100 ms (the best of five; 0 means nothing spun)
and the wall time each sleep took.

    python benchmarks/core_idle_threads.py                 # MLP and GPT steps, 2 threads
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GAPS = (0.001, 0.01, 0.1)


def child(case: str) -> dict:
    from _common import gemm_provider
    from _eager_cases import CASES

    step = CASES[case].builder("pullback")
    for _ in range(5):
        step()
    burnt: dict[str, float] = {}
    walls: dict[str, float] = {}
    for gap in GAPS:
        best = (float("inf"), 0.0)
        for _ in range(5):
            step()
            cpu, wall = time.process_time(), time.perf_counter()
            time.sleep(gap)
            best = min(best, (time.process_time() - cpu, time.perf_counter() - wall))
        burnt[f"{gap * 1e3:g}"] = round(best[0] * 1e3, 3)
        walls[f"{gap * 1e3:g}"] = round(best[1] * 1e3, 3)
    return {"benchmark": "core_idle_threads", "case": case,
            "gemm": gemm_provider(), "threads": os.environ["PULLBACK_NUM_THREADS"],
            "cpu_ms_burnt_while_sleeping": burnt, "sleep_wall_ms": walls}


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2])))
        return
    for gemm in ("auto", "numpy"):
        for case in ("mlp_step", "gpt_step"):
            env = dict(os.environ, PULLBACK_GEMM=gemm, PULLBACK_NUM_THREADS="2",
                       OPENBLAS_NUM_THREADS="2")
            done = subprocess.run([sys.executable, str(HERE / "core_idle_threads.py"), "--child",
                                   case], env=env, cwd=HERE, capture_output=True, text=True,
                                  check=True)
            print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
