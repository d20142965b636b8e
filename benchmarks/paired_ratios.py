"""Each round's own pullback / PyTorch ratio, pooled over the runs of ``eager_targets.py`` that a
CSV holds, per revision and case: the figure to read when the machine's speed drifted between
runs (a round's two processes ran one after the other, so its ratio shares the moment's speed,
while the bests of a run may come from different moments).

    python benchmarks/paired_ratios.py docs/eager_targets_2026-12-07_round4.csv
    python benchmarks/paired_ratios.py docs/eager_targets_2026-12-07_round4.csv --cases op_chain

The CSV has ``eager_targets.py``'s columns (``pullback_runs_ms`` and ``torch_runs_ms``: one time
per round, in order), and optionally ``revision``, which groups its rows. Prints one JSON line
per revision and case: the rounds pooled, the median ratio, its quartiles, the share of
rounds within the target, and each side's median time (which side moved, between revisions).
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

from _common import emit, round_ratios

# The runs docs/benchmarks.md's fourth round pools (what `nox -s bench` prints without arguments).
ROUND4 = Path(__file__).resolve().parent.parent / "docs" / "eager_targets_2026-12-07_round4.csv"


def _row_ratios(row: dict[str, str]) -> list[float]:
    """The ratio of each round of one ``eager_targets.py`` row."""
    return round_ratios([float(v) for v in row["pullback_runs_ms"].split()],
                        [float(v) for v in row["torch_runs_ms"].split()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, nargs="?", default=ROUND4,
                        help="runs of eager_targets.py (default: the fourth round's)")
    parser.add_argument("--cases", nargs="*", help="only these cases (default: every one)")
    args = parser.parse_args()
    pooled: dict[tuple[str, str], list[float]] = {}
    times: dict[tuple[str, str], dict[str, list[float]]] = {}  # each side's round times
    targets: dict[str, float] = {}
    with args.csv.open(newline="") as f:
        for row in csv.DictReader(f):
            if args.cases and row["case"] not in args.cases:
                continue
            key = (row.get("revision", ""), row["case"])
            pooled.setdefault(key, []).extend(_row_ratios(row))
            for side in ("pullback", "torch"):
                times.setdefault(key, {}).setdefault(side, []).extend(
                    float(v) for v in row[f"{side}_runs_ms"].split())
            targets[row["case"]] = float(row["target"])
    for (revision, case), ratios in pooled.items():
        low, median, high = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
        sides = times[(revision, case)]
        emit(benchmark="paired_ratios", revision=revision, case=case, rounds=len(ratios),
             median_ratio=round(median, 3), quartiles=[round(low, 3), round(high, 3)],
             target=targets[case],
             share_within_target=round(sum(r <= targets[case] for r in ratios) / len(ratios), 2),
             pullback_median_ms=round(statistics.median(sides["pullback"]), 3),
             torch_median_ms=round(statistics.median(sides["torch"]), 3))


if __name__ == "__main__":
    main()
