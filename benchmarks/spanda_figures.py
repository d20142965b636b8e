"""The plots and tables of docs/spanda.md, from the CSVs the spanda benchmarks wrote (no timing
and no training here: rerun those first, see their docstrings).

    python benchmarks/spanda_figures.py --dir docs/spanda

Reads ``step_time.csv`` (benchmarks/spanda_step.py ``--csv``) and, per input encoding,
``fashion_mnist_<encoding>/summary.json``, ``fashion_mnist_<encoding>/activity.csv`` and
``energy_<encoding>.csv`` (benchmarks/spanda_activity.py). Writes ``step_time.png`` (each
variant's time over snnTorch's loop) and ``activity.png`` (sparsity per layer, operation and
energy ratios, each next to the seed's claim), and prints the Markdown tables of the docs page.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
from typing import Any

ENCODINGS = ("direct", "rate")


def read_csv(path: str) -> list[dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display
    import matplotlib.pyplot as plt

    return plt


def setting(row: dict[str, str]) -> str:
    """What a step-time row measured, in words: input, size, threads and clock."""
    size = "" if (row["hidden"], row["batch"]) == ("1000", "128") else \
        f", hidden {row['hidden']}, batch {row['batch']}"
    clock = "CPU time" if row["clock"] == "cpu" else "wall clock"
    thread = "thread" if row["threads"] == "1" else "threads"
    what = "LIF loop alone" if row["encoding"] == "current" else f"{row['encoding']} input"
    return f"{what}{size}; {row['threads']} {thread}, {clock}"


def step_figures(rows: list[dict[str, str]], path: str) -> None:
    """One horizontal bar per (setting, variant): its time over snnTorch's loop (1 = as fast);
    pullback's variants green where they meet the target, red where not, snnTorch's own gray."""
    plt = pyplot()
    labels = [f"{setting(r)}: {r['variant']}" for r in rows]
    ratios = [float(r["ratio"]) for r in rows]
    colors = ["tab:gray" if r["variant"].startswith("snntorch") else
              "tab:green" if v <= 1.0 else "tab:red" for r, v in zip(rows, ratios)]
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.4))
    ax.barh(range(len(rows)), ratios, color=colors)
    for y, v in enumerate(ratios):
        ax.annotate(f"{v:.2f}", (v, y), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=7)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time / snnTorch's loop on the same work (T = 25; target: at most 1)")
    ax.set_title("pullback.spanda vs snnTorch 1.0, CPU (gray: snnTorch hoisted)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def step_table(rows: list[dict[str, str]]) -> str:
    lines = ["| input, size; threads, clock | variant | pullback (ms) | snnTorch loop (ms) | ratio |",
             "|---|---|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {setting(r)} | `{r['variant']}` | {float(r['variant_ms']):.1f} | "
                     f"{float(r['snntorch_loop_ms']):.1f} | **{float(r['ratio']):.2f}** |")
    return "\n".join(lines)


def load_run(folder: str, encoding: str) -> dict[str, Any]:
    """The example's summary, its per-layer counts and the energy rows of one encoding."""
    run = os.path.join(folder, f"fashion_mnist_{encoding}")
    with open(os.path.join(run, "summary.json")) as f:
        summary = json.load(f)
    return {"summary": summary, "layers": read_csv(os.path.join(run, "activity.csv")),
            "energy": {r["arithmetic"]: r for r in
                       read_csv(os.path.join(folder, f"energy_{encoding}.csv"))}}


def activity_figures(runs: dict[str, dict[str, Any]], path: str) -> None:
    """Three panels, each encoding a bar group and the seed's figure a dashed line: sparsity,
    fewer operations, less energy (float32)."""
    plt = pyplot()
    seed = next(iter(runs.values()))["summary"]["seed_claims"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    width = 0.38

    def bars(ax: Any, groups: list[str], values: dict[str, list[float]]) -> None:
        for i, (encoding, ys) in enumerate(values.items()):
            xs = [j + (i - 0.5) * width for j in range(len(groups))]
            ax.bar(xs, ys, width, label=f"{encoding} input")
            for x, y in zip(xs, ys):
                ax.annotate(f"{y:.3g}", (x, y), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(groups)), groups, fontsize=8)
        ax.grid(axis="y", alpha=0.3)

    layer_names = [f"layer {r['name']}" for r in next(iter(runs.values()))["layers"]]
    bars(axes[0], layer_names + ["network"],
         {e: [float(r["sparsity"]) for r in run["layers"]] + [run["summary"]["sparsity_network"]]
          for e, run in runs.items()})
    axes[0].axhline(seed["sparsity"], color="black", linestyle="--", label="seed: 96.50 %")
    axes[0].set_ylim(0, 1.05)
    axes[0].set_title("silent neuron-steps (test set)")

    bars(axes[1], ["dense SNN /\nevent-driven SNN", "ANN MACs /\nSNN operations"],
         {e: [run["summary"]["dense_snn_over_event_driven_ops"],
              run["summary"]["ann_macs_over_snn_synaptic_ops"]] for e, run in runs.items()})
    axes[1].axhline(seed["fewer_operations"], color="black", linestyle="--", label="seed: 28.57x")
    axes[1].set_yscale("log")
    axes[1].set_title("fewer operations (x)")

    bars(axes[2], ["dense SNN /\nevent-driven SNN", "ANN / SNN"],
         {e: [float(run["energy"]["fp32"]["dense_over_event_driven"]),
              float(run["energy"]["fp32"]["ann_over_snn"])] for e, run in runs.items()})
    axes[2].axhline(seed["energy_reduction"], color="black", linestyle="--",
                    label="seed: 146.03x")
    axes[2].set_yscale("log")
    axes[2].set_title("less energy (x), float32, Horowitz 45 nm")
    for ax in axes:
        ax.legend(fontsize=7, loc="lower right" if ax is axes[0] else "best")
    fig.suptitle("784-1000-10 LIF SNN, T = 25, Fashion-MNIST test set (pullback.spanda)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def activity_table(runs: dict[str, dict[str, Any]]) -> str:
    """Rows: each figure; columns: each encoding, then the seed's claim."""
    s = {e: run["summary"] for e, run in runs.items()}
    layers = {e: run["layers"] for e, run in runs.items()}
    energy = {e: run["energy"] for e, run in runs.items()}
    seed = next(iter(s.values()))["seed_claims"]

    def pct(v: float) -> str:
        return f"{100 * v:.2f} %"

    def big(v: float) -> str:
        return f"{v / 1e9:.2f} G"

    rows: list[tuple[str, dict[str, str], str]] = [
        ("SNN test accuracy (spike counts, ties by membrane)",
         {e: pct(v["snn_test_accuracy"]) for e, v in s.items()}, ""),
        ("SNN test accuracy (ties to the lowest index, snnTorch's `accuracy_rate`)",
         {e: pct(v["snn_test_accuracy_lowest_index_ties"]) for e, v in s.items()}, ""),
        ("same-size ANN test accuracy", {e: pct(v["ann_test_accuracy"]) for e, v in s.items()},
         ""),
    ]
    for i, layer in enumerate(next(iter(layers.values()))):
        rows.append((f"silent neuron-steps, layer {layer['name']}",
                     {e: pct(float(ls[i]["sparsity"])) for e, ls in layers.items()}, ""))
    rows += [
        ("silent neuron-steps, network", {e: pct(v["sparsity_network"]) for e, v in s.items()},
         pct(seed["sparsity"])),
        ("SNN accumulates (spike-driven)", {e: big(v["snn_accumulates"]) for e, v in s.items()},
         ""),
        ("SNN multiply-accumulates (real-valued input)",
         {e: big(v["snn_multiply_accumulates"]) for e, v in s.items()}, ""),
        ("SNN neuron updates", {e: big(v["snn_neuron_updates"]) for e, v in s.items()}, ""),
        ("ANN multiply-accumulates", {e: big(v["ann_macs"]) for e, v in s.items()}, ""),
        ("fewer operations: dense SNN / event-driven SNN",
         {e: f"{v['dense_snn_over_event_driven_ops']:.2f}x" for e, v in s.items()},
         f"{seed['fewer_operations']}x"),
    ]
    for i, layer in enumerate(next(iter(layers.values()))):
        rows.append((f"fewer operations: dense / event-driven, layer {layer['name']}",
                     {e: f"{int(ls[i]['dense_ops']) / int(ls[i]['synaptic_ops']):.2f}x"
                      + ("" if ls[i]["binary_input"] == "True" else " (current input)")
                      for e, ls in layers.items()}, ""))
    rows += [
        ("fewer operations: ANN MACs / SNN synaptic operations",
         {e: f"{v['ann_macs_over_snn_synaptic_ops']:.2f}x" for e, v in s.items()}, ""),
    ]
    for key, name in (("fp32", "float32"), ("int32", "int32"), ("int8", "int8")):
        rows.append((f"less energy, {name}: dense SNN / event-driven SNN",
                     {e: f"{float(t[key]['dense_over_event_driven']):.2f}x"
                      for e, t in energy.items()},
                     f"{seed['energy_reduction']}x" if key == "fp32" else ""))
        rows.append((f"less energy, {name}: ANN / SNN (neuron updates included)",
                     {e: f"{float(t[key]['ann_over_snn']):.2f}x" for e, t in energy.items()}, ""))
    encodings = list(s)
    lines = ["| figure | " + " | ".join(f"{e} input" for e in encodings) + " | seed |",
             "|---|" + "---:|" * (len(encodings) + 1)]
    for name, values, seed_value in rows:
        lines.append(f"| {name} | " + " | ".join(values[e] for e in encodings)
                     + f" | {seed_value} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="docs/spanda", help="where the CSVs are and PNGs go")
    args = parser.parse_args()
    steps = read_csv(os.path.join(args.dir, "step_time.csv"))
    step_figures(steps, os.path.join(args.dir, "step_time.png"))
    runs = {e: load_run(args.dir, e) for e in ENCODINGS
            if os.path.exists(os.path.join(args.dir, f"fashion_mnist_{e}", "summary.json"))}
    activity_figures(runs, os.path.join(args.dir, "activity.png"))
    print("<!-- step time -->\n" + step_table(steps))
    print("\n<!-- activity -->\n" + activity_table(runs))


if __name__ == "__main__":
    main()
