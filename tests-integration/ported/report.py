"""The ported corpus's results as files: CSV, JSON lines, a plot, and the corpus table of
docs/porting.md (between its ``<!-- corpus table -->`` markers), all from compare.py's rows."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from programs import BY_NAME, PROGRAMS

BEGIN, END = "<!-- corpus table: begin -->", "<!-- corpus table: end -->"


def merge(folder: Path, stem: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``folder/stem.jsonl`` with those of the programs in ``rows`` replaced by
    ``rows`` (a run of some programs, e.g. with more seeds, updates only them), in the
    corpus's order."""
    path = folder / f"{stem}.jsonl"
    old = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    ran = {r["program"] for r in rows}
    kept = [r for r in old if r["program"] not in ran and r["program"] in BY_NAME]
    order = {p.name: i for i, p in enumerate(PROGRAMS)}
    return sorted(kept + rows, key=lambda r: order[r["program"]])


def write_results(rows: list[dict[str, Any]], folder: Path, stem: str) -> None:
    """``stem``.jsonl (every row), ``stem``.csv (the metric rows) and ``stem``.png (each
    metric under both frameworks, with torch's spread)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{stem}.jsonl", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    metrics = [r for r in rows if "metric" in r and r["metric"] != "seconds_per_run"]
    if not metrics:
        return
    fields = list(dict.fromkeys(k for r in metrics for k in r))
    with open(folder / f"{stem}.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(metrics)
    if "pullback" in metrics[0]:
        _plot(metrics, folder / f"{stem}.png")


def _plot(metrics: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = 6
    rows = -(-len(metrics) // columns)
    figure, axes = plt.subplots(rows, columns, figsize=(2.2 * columns, 2.4 * rows),
                                squeeze=False)
    for ax in axes.flat[len(metrics):]:
        ax.axis("off")
    for ax, row in zip(axes.flat, metrics):
        ax.bar(["torch", "pullback"], [row["torch"], row["pullback"]],
               yerr=[row["torch_spread"] / 2, 0],
               color=["#888", "#3a7" if row["within"] else "#c33"])
        ax.set_title(f"{row['program']}\n{row['metric']}", fontsize=7)
        ax.tick_params(labelsize=6)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def write_docs_table(rows: list[dict[str, Any]], docs: Path, args: Any) -> None:
    """Replace the corpus table of ``docs`` with these results."""
    programs = list(dict.fromkeys(r["program"] for r in rows))
    ran = [p for p in programs if not any("skipped" in r or "failed" in r
                                          for r in rows if r["program"] == p)]
    within = [p for p in ran if all(r.get("within", True) for r in rows if r["program"] == p)]
    lines = [BEGIN,
             f"{len(ran)} of {len(programs)} programs ran under both frameworks; "
             f"{len(within)} of them reached torch's metrics within the tolerance "
             f"({'small' if args.smoke else 'full'} configurations; means over the seeds).", "",
             "| program | kind | seeds | metric | torch | pullback | torch's spread | difference "
             "| tolerance | within |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        name = row["program"]
        link = f"[{name}]({BY_NAME[name].origin})" if BY_NAME[name].origin != "house" else name
        if "skipped" in row or "failed" in row:
            why = row.get("skipped") or "failed: " + row["failed"].strip().splitlines()[-1]
            lines.append(f"| {link} | {BY_NAME[name].kind} | - | - | - | - | - | - | - | {why} |")
        elif row["metric"] != "seconds_per_run":
            lines.append(
                f"| {link} | {row['kind']} | {row['seeds']} | {row['metric']} | {row['torch']:.4g} | "
                f"{row['pullback']:.4g} | {row['torch_spread']:.3g} | "
                f"{row['difference']:+.3g} | {row['tolerance']:.3g} | "
                f"{'yes' if row['within'] else '**no**'} |")
    lines += ["", "| program | torch s/run | pullback s/run | ratio |", "|---|---|---|---|"]
    for row in rows:
        if row.get("metric") == "seconds_per_run":
            lines.append(f"| {row['program']} | {row['torch']:.1f} | {row['pullback']:.1f} | "
                         f"{row['ratio']:.2f} |")
    lines.append(END)
    text = docs.read_text()
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{docs} has no {BEGIN} ... {END} section to replace")
    docs.write_text(pattern.sub(lambda _: "\n".join(lines), text))
