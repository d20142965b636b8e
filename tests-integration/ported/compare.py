"""Run the ported PyTorch scripts under torch and under pullback, and compare their final
metrics.

Each script in this folder is an ordinary PyTorch training script; :mod:`port` runs it under
pullback by changing only its imports. For every script and seed, both runs print their final
metrics as a JSON line; this prints one JSON line per metric with both frameworks' means over
the seeds, torch's own spread over the seeds (its run-to-run noise), the difference, and
whether the difference is within the tolerance (the larger of the script's floor and torch's
spread). The exit status is 1 when a metric is outside it.

    python tests-integration/ported/compare.py --out docs/porting  # full runs, 3 seeds
    python tests-integration/ported/compare.py --smoke --seeds 1 --scripts mlp_digits
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

# script -> (full arguments, smoke arguments, {metric: tolerance floor}). Accuracies are
# compared in absolute points, losses relative to torch's value.
SCRIPTS: dict[str, tuple[list[str], list[str], dict[str, float]]] = {
    "mlp_digits": (["--workers", "2"], ["--epochs", "3", "--workers", "2"],
                   {"test_accuracy": 0.03, "test_loss": 0.15}),
    "cnn_digits": ([], ["--epochs", "2"], {"test_accuracy": 0.03, "test_loss": 0.25}),
    "vae_digits": ([], ["--epochs", "3"], {"test_loss": 0.05}),
    "lstm_lm": ([], ["--steps", "30", "--chars", "30000"], {"val_loss": 0.05}),
}
RELATIVE = {"test_loss", "val_loss", "train_loss"}
# Both frameworks on one thread: on a loaded machine torch's spinning OpenMP threads made its
# runs many times slower, and one thread each is the fairer wall-time comparison.
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "PULLBACK_NUM_THREADS": "1"}


def run(script: str, arguments: list[str], framework: str, seed: int) -> dict[str, Any]:
    """One run's final metrics (the last line of its output, JSON), and its wall time."""
    command = [sys.executable, str(HERE / "port.py"), *(["--torch"] if framework == "torch"
                                                        else []),
               str(HERE / f"{script}.py"), *arguments, "--seed", str(seed)]
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, timeout=3600,
                            env={**os.environ, **ONE_THREAD, "PYTHONWARNINGS": "ignore"})
    if result.returncode != 0:
        raise RuntimeError(f"{script} under {framework} failed ({result.returncode}):\n"
                           f"{result.stderr[-3000:]}")
    metrics = json.loads(result.stdout.strip().splitlines()[-1])
    metrics["seconds"] = time.perf_counter() - started
    return metrics


def compare(script: str, smoke: bool, seeds: int) -> list[dict[str, Any]]:
    """The comparison rows of one script."""
    full, small, floors = SCRIPTS[script]
    arguments = small if smoke else full
    runs = {fw: [run(script, arguments, fw, seed) for seed in range(seeds)]
            for fw in ("torch", "pullback")}
    rows = []
    for metric, floor in floors.items():
        values = {fw: [r[metric] for r in runs[fw]] for fw in runs}
        means = {fw: sum(v) / len(v) for fw, v in values.items()}
        spread = max(values["torch"]) - min(values["torch"])
        difference = means["pullback"] - means["torch"]
        scale = abs(means["torch"]) if metric in RELATIVE else 1.0
        tolerance = max(floor * scale, spread)
        rows.append({"script": script, "metric": metric, "smoke": smoke, "seeds": seeds,
                     "torch": means["torch"], "pullback": means["pullback"],
                     "torch_spread": spread, "difference": difference, "tolerance": tolerance,
                     "within": abs(difference) <= tolerance})
    seconds = {fw: sum(r["seconds"] for r in runs[fw]) / seeds for fw in runs}
    rows.append({"script": script, "metric": "seconds_per_run", "torch": seconds["torch"],
                 "pullback": seconds["pullback"],
                 "ratio": seconds["pullback"] / seconds["torch"],
                 "note": "wall time of the whole process (imports included), one thread"})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="the small configurations")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--scripts", nargs="*", default=list(SCRIPTS), choices=list(SCRIPTS))
    parser.add_argument("--out", type=Path, help="write ported_scripts.csv and .png here")
    args = parser.parse_args()
    failed, rows = False, []
    for script in args.scripts:
        for row in compare(script, args.smoke, args.seeds):
            print(json.dumps(row), flush=True)
            rows.append(row)
            failed |= row.get("within") is False
    if args.out is not None:
        write_results(rows, args.out)
    return 1 if failed else 0


def write_results(rows: list[dict[str, Any]], folder: Path) -> None:
    """The metric rows as CSV, and a plot of each metric under both frameworks."""
    import csv

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    metrics = [r for r in rows if "within" in r]
    fields = ["script", "metric", "seeds", "torch", "pullback", "torch_spread", "difference",
              "tolerance", "within"]
    with open(folder / "ported_scripts.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(metrics)
    figure, axes = plt.subplots(1, len(metrics), figsize=(2.2 * len(metrics), 3))
    for ax, row in zip(list(axes) if len(metrics) > 1 else [axes], metrics):
        ax.bar(["torch", "pullback"], [row["torch"], row["pullback"]],
               yerr=[row["torch_spread"] / 2, 0], color=["#888", "#3a7"])
        ax.set_title(f"{row['script']}\n{row['metric']}", fontsize=8)
        ax.tick_params(labelsize=7)
    figure.tight_layout()
    figure.savefig(folder / "ported_scripts.png", dpi=120)


if __name__ == "__main__":
    sys.exit(main())
