"""Run the ported programs under torch and under pullback, and compare their final metrics.

Each program (programs.py) is ordinary PyTorch code; :mod:`port` runs it under pullback by
changing only its imports. Each run happens in a fresh working folder (the programs write
checkpoints and data there), one thread per framework. For every program and seed, both runs
print their final metrics as a JSON line; this prints one JSON line per metric with both
frameworks' means over the seeds, torch's own spread over the seeds (its run-to-run noise),
the difference and whether it is within the tolerance (the larger of the metric's floor and
torch's spread). The exit status is 1 when a metric is outside it.

    python tests-integration/ported/compare.py --seeds 2 --out docs/porting --docs docs/porting.md
    python tests-integration/ported/compare.py --seeds 6 --programs gat --out docs/porting \
        --docs docs/porting.md   # updates gat's rows, keeps the others
    python tests-integration/ported/compare.py --smoke --seeds 1 --programs mnist gcn
    python tests-integration/ported/compare.py --noise --seeds 6   # torch's spread, small runs
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from programs import BY_NAME, PROGRAMS, Program  # noqa: E402

# Both frameworks on one thread: on a loaded machine torch's spinning OpenMP threads made its
# runs many times slower, and one thread each is the fairer wall-time comparison.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "PULLBACK_NUM_THREADS": "1"}


def missing_needs(program: Program) -> list[str]:
    """What the program needs and this environment lacks (modules, or files named with an
    environment variable)."""
    missing = []
    for need in program.needs:
        if need.startswith("$"):
            variable, _, rest = need[1:].partition("/")
            if not (Path(os.environ.get(variable, "/nonexistent")) / rest).exists():
                missing.append(need)
        elif importlib.util.find_spec(need) is None:
            missing.append(need)
    return missing


def run(program: Program, smoke: bool, framework: str, seed: int) -> dict[str, Any]:
    """One run: every step of the program in a fresh working folder; the metrics its steps
    print (their last lines, JSON, merged) and the wall time of the whole run."""
    metrics: dict[str, Any] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"ported-{program.name}-") as folder:
        for step in program.steps:
            arguments = list(step.smoke if smoke else step.full)
            if step.seed is not None:
                arguments.append(step.seed.format(seed))
            command = [sys.executable, str(HERE / "port.py"),
                       *(["--torch"] if framework == "torch" else []),
                       str(HERE / step.script), *arguments]
            result = subprocess.run(command, capture_output=True, text=True, timeout=3600,
                                    cwd=folder, env={**os.environ, **ONE_THREAD,
                                                     "PYTHONWARNINGS": "ignore"})
            if result.returncode != 0:
                raise RuntimeError(f"{program.name} ({step.script}) under {framework} failed "
                                   f"({result.returncode}):\n{result.stderr[-3000:]}")
            lines = result.stdout.strip().splitlines()
            if lines and lines[-1].startswith("{"):
                metrics.update(json.loads(lines[-1]))
    metrics["seconds"] = time.perf_counter() - started
    return metrics


def compare(program: Program, smoke: bool, seeds: int) -> list[dict[str, Any]]:
    """The comparison rows of one program over seeds 0..seeds-1."""
    runs = {fw: [run(program, smoke, fw, seed) for seed in range(seeds)]
            for fw in ("torch", "pullback")}
    rows = []
    for metric, (kind, floor) in program.floors.items():
        values = {fw: [float(r[metric]) for r in runs[fw]] for fw in runs}
        means = {fw: sum(v) / len(v) for fw, v in values.items()}
        spread = max(values["torch"]) - min(values["torch"])
        difference = means["pullback"] - means["torch"]
        scale = abs(means["torch"]) if kind == "rel" else 1.0
        tolerance = max(floor * scale, spread)
        rows.append({"program": program.name, "kind": program.kind, "metric": metric,
                     "smoke": smoke, "seeds": seeds, "torch": means["torch"],
                     "pullback": means["pullback"], "torch_spread": spread,
                     "difference": difference, "tolerance": tolerance,
                     "within": abs(difference) <= tolerance})
    seconds = {fw: sum(r["seconds"] for r in runs[fw]) / seeds for fw in runs}
    rows.append({"program": program.name, "metric": "seconds_per_run", "torch": seconds["torch"],
                 "pullback": seconds["pullback"],
                 "ratio": seconds["pullback"] / seconds["torch"],
                 "note": "wall time of the whole run (imports included), one thread"})
    return rows


def noise(program: Program, seeds: int) -> list[dict[str, Any]]:
    """torch's own spread of each metric over seeds in the small configuration: what the
    floors in programs.py are set from."""
    runs = [run(program, True, "torch", seed) for seed in range(seeds)]
    rows = []
    for metric, (kind, floor) in program.floors.items():
        values = [float(r[metric]) for r in runs]
        spread = max(values) - min(values)
        mean = sum(values) / len(values)
        rows.append({"program": program.name, "metric": metric, "seeds": seeds,
                     "torch_mean": mean, "torch_spread": spread,
                     "relative_spread": spread / abs(mean) if mean else None,
                     "floor": floor, "floor_kind": kind})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="the small configurations")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--programs", nargs="*", default=[p.name for p in PROGRAMS],
                        choices=[p.name for p in PROGRAMS])
    parser.add_argument("--noise", action="store_true",
                        help="only torch, small configurations: its spread over the seeds")
    parser.add_argument("--out", type=Path, help="write the CSV, JSON lines and plot here")
    parser.add_argument("--docs", type=Path, help="regenerate the corpus table in this file")
    args = parser.parse_args()
    failed, rows = False, []
    for name in args.programs:
        program = BY_NAME[name]
        missing = missing_needs(program)
        if missing:
            row = {"program": name, "skipped": f"needs {', '.join(missing)}"}
            print(json.dumps(row), flush=True)
            rows.append(row)
            continue
        try:
            found = noise(program, args.seeds) if args.noise else \
                compare(program, args.smoke, args.seeds)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            found = [{"program": name, "failed": str(exc)[-2000:]}]
        for row in found:
            print(json.dumps(row), flush=True)
            rows.append(row)
            failed |= row.get("within") is False or "failed" in row
    if args.out is not None:  # programs not run here keep their last results
        import report

        stem = "noise" if args.noise else "ported_programs"
        rows = report.merge(args.out, stem, rows)
        report.write_results(rows, args.out, stem)
        if args.docs is not None and not args.noise:
            report.write_docs_table(rows, args.docs, args)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
