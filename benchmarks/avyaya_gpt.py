"""The reversible GPT (``pullback-gpt train --reversible``) next to the ordinary one at the same
size: peak memory and time of a training step at 4, 16 and 64 layers, and the loss curves of a
few hundred steps on TinyShakespeare.

    python benchmarks/avyaya_gpt.py --threads 1 --clock cpu --out docs/avyaya  # committed

The model is nano-cpu's (width 128, 4 heads, context 64, batch 12) with ``n_layer`` changed.
Memory is the peak of one step (forward, loss, backward) above what was allocated before it
(parameters; gradients set to None), by tracemalloc and by the resident set's high-water mark;
"activation" subtracts one gradient per parameter, which both models allocate (as in
avyaya_memory.py). The training
runs use nano-cpu's recipe with ``--steps`` (default 500), the same seed and batches.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import tempfile
from pathlib import Path

from _avyaya_bench import (  # first: --threads
    mib, pyplot, rss_peak, saved, timed, traced_peak, write_csv,
)

import numpy as np

import pullback as pb
from pullback.gpt import GPT
from pullback.gpt.config import PRESETS
from pullback.gpt.data import tinyshakespeare
from pullback.gpt.train import train

from _common import emit
from _nn_bench import OPTIONS, time_pair

PRESET = "nano-cpu"


def step_of(model: GPT, batch: int):
    """(reset, work) of one training step on a fixed random batch."""
    cfg = model.config
    rng = np.random.default_rng(0)
    idx = pb.tensor(rng.integers(0, cfg.vocab_size, (batch, cfg.block_size)))
    targets = pb.tensor(rng.integers(0, cfg.vocab_size, (batch, cfg.block_size)))

    def reset():
        model.zero_grad(set_to_none=True)

    def work():
        model(idx, targets)[1].backward()
    return reset, work


def memory(layers: list[int], rows: list[dict]) -> None:
    preset = PRESETS[PRESET]
    for n_layer in layers:
        steps = {}
        for path in ("reversible", "ordinary"):
            pb.manual_seed(0)
            model = GPT(dataclasses.replace(preset.model, n_layer=n_layer,
                                            reversible=path == "reversible"))
            steps[path] = step_of(model, preset.batch_size)
            timed(steps[path])()  # warm
        grad_bytes = sum(p.array.nbytes for p in model.parameters())  # the same in both
        traced = {path: traced_peak(work, reset) for path, (reset, work) in steps.items()}
        rss = {path: rss_peak(work, reset) for path, (reset, work) in steps.items()}
        seconds = dict(zip(("reversible", "ordinary"),
                           time_pair(timed(steps["reversible"]), timed(steps["ordinary"]),
                                     warmup=1, repeats=5, block=1)))
        for path in ("reversible", "ordinary"):
            rows.append({"n_layer": n_layer, "model": path,
                         "traced_peak_mib": mib(traced[path]),
                         "traced_activation_mib": mib(traced[path], grad_bytes),
                         "rss_peak_mib": mib(rss[path]),
                         "rss_activation_mib": mib(rss[path], grad_bytes),
                         "step_ms": round(seconds[path] * 1e3, 2)})
        record = dict(benchmark="avyaya_gpt_memory", n_layer=n_layer,
                      gradients_mib=mib(grad_bytes), saved_traced=saved(traced),
                      saved_traced_activation=saved(traced, grad_bytes),
                      step_time_ratio=round(seconds["reversible"] / seconds["ordinary"], 3),
                      threads=OPTIONS.threads, clock=OPTIONS.clock)
        if rss["ordinary"] is not None:
            record["saved_rss_activation"] = saved(rss, grad_bytes)
        emit(**record)


def training(steps: int, rows: list[dict]) -> None:
    text = tinyshakespeare().text
    cfg = PRESETS[PRESET].with_overrides(steps=steps, warmup=min(100, steps // 10),
                                         eval_interval=max(steps // 5, 1))
    curves = {}
    for reversible in (False, True):
        run_cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model,
                                                                     reversible=reversible))
        with tempfile.TemporaryDirectory() as out:
            result = train(run_cfg, text, out, quiet=True)
            with open(Path(out) / "metrics.csv", newline="") as f:
                curves[reversible] = list(csv.DictReader(f))
        emit(benchmark="avyaya_gpt_training", model="reversible" if reversible else "ordinary",
             steps=result.steps, val_loss=result.final_val_loss,
             train_loss=result.final_train_loss, seconds=round(result.elapsed_s, 1))
    for ordinary, reversible in zip(curves[False], curves[True], strict=True):
        rows.append({"step": ordinary["step"], "ordinary_loss": ordinary["loss"],
                     "reversible_loss": reversible["loss"],
                     "ordinary_val_loss": ordinary["val_loss"],
                     "reversible_val_loss": reversible["val_loss"]})


def plot_memory(rows, path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    for column, label in (("traced_activation_mib", "tracemalloc"),
                          ("rss_activation_mib", "RSS")):
        for model, style in (("reversible", "-o"), ("ordinary", "--s")):
            pts = [(r["n_layer"], r[column]) for r in rows if r["model"] == model and r[column] != ""]
            ax.plot(*zip(*pts), style, label=f"{model}, {label}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("layers")
    ax.set_ylabel("peak of one step less its gradients (MiB)")
    ax.set_title(f"GPT, {PRESET} width and batch")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_loss(rows, path: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for model, color in (("ordinary", "C0"), ("reversible", "C1")):
        pts = [(int(r["step"]), float(r[f"{model}_loss"])) for r in rows if r[f"{model}_loss"]]
        ax.plot(*zip(*pts), color=color, lw=0.6, alpha=0.6, label=f"{model}, batch loss")
        val = [(int(r["step"]), float(r[f"{model}_val_loss"])) for r in rows
               if r[f"{model}_val_loss"]]
        ax.plot(*zip(*val), "o-", color=color, label=f"{model}, val loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats)")
    ax.set_title(f"TinyShakespeare, {PRESET} (4 layers)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="4,16,64")
    parser.add_argument("--steps", type=int, default=500, help="training steps (0: none)")
    parser.add_argument("--out", help="write gpt_memory.csv/png and gpt_loss.csv/png here")
    args, _ = parser.parse_known_args()
    memory_rows: list[dict] = []
    memory([int(n) for n in args.layers.split(",")], memory_rows)
    loss_rows: list[dict] = []
    if args.steps:
        training(args.steps, loss_rows)
    if args.out:
        write_csv(os.path.join(args.out, "gpt_memory.csv"), memory_rows)
        plot_memory(memory_rows, os.path.join(args.out, "gpt_memory.png"))
        if loss_rows:
            write_csv(os.path.join(args.out, "gpt_loss.csv"), loss_rows)
            plot_loss(loss_rows, os.path.join(args.out, "gpt_loss.png"))


if __name__ == "__main__":
    main()
