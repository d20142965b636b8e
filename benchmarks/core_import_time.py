"""Start-up: the time of ``python -c "import pullback"`` and ``python -c "import pullback,
pullback.nn"``, next to ``python -c "import torch"``.

Each command runs as a process of its own, the three alternating, ``--rounds`` times; the figure
is the median wall time of the whole process (the interpreter's start included, as a user waits
for it), with its CPU time beside it (steadier on a busy machine). Targets (issue 38): ``import
pullback`` at most 0.3 s, ``import pullback, pullback.nn`` at most 0.5 s, on a quiet machine.

Run: python benchmarks/core_import_time.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

from _common import emit

TARGETS = {"pullback": 0.3, "pullback, pullback.nn": 0.5, "torch": None}



def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(modules: str) -> tuple[float, float] | None:
    """Wall and CPU seconds of ``python -c "import <modules>"``, None if the import fails."""
    cpu, wall = _children_cpu(), time.perf_counter()
    result = subprocess.run([sys.executable, "-c", f"import {modules}"], capture_output=True)
    wall, cpu = time.perf_counter() - wall, _children_cpu() - cpu
    return None if result.returncode != 0 else (wall, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in TARGETS}
    for _ in range(args.rounds):
        for name in TARGETS:  # alternating: a slow spell of the machine hits every side
            measured = measure(name)
            if measured is not None:
                times[name].append(measured)
    torch_wall = statistics.median(w for w, _ in times["torch"]) if times["torch"] else None
    for name, target in TARGETS.items():
        if not times[name]:
            emit(bench="import_time", modules=name, skipped=f"import {name} failed")
            continue
        wall = statistics.median(w for w, _ in times[name])
        cpu = statistics.median(c for _, c in times[name])
        emit(bench="import_time", modules=name, wall_s=round(wall, 4), cpu_s=round(cpu, 4),
             target_s=target, meets_target=None if target is None else wall <= target,
             ratio_to_torch=round(wall / torch_wall, 3) if torch_wall else None,
             rounds=len(times[name]))


if __name__ == "__main__":
    main()
