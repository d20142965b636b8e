"""One DP-SGD step (forward, backward, per-sample gradients, clipping, noise, SGD update) of the
Fashion-MNIST MLP and CNN of examples/, pullback.dp against Opacus (CPU, PyTorch 2.13) with the
same model, batch, clipping norm and noise multiplier, in one process; and each one's overhead
over its own non-private step. JSON lines with ratios.

Target (issue 25): the DP-SGD step no slower than Opacus's (``time_vs_opacus <= 1``); the plain
step (issue 41): at most 1.1x PyTorch's (``plain_ratio``; eager_targets.py times the CNN's in
separate processes).

    python benchmarks/dp_step.py                                  # 2 threads, wall clock
    python benchmarks/dp_step.py --threads 1 --clock cpu          # on a busy machine
    python benchmarks/dp_step.py --batches 64                     # one batch size
    python benchmarks/dp_step.py --threads 1 --clock cpu --order interleaved --out docs/dp

``--out DIR`` also writes dp_step.csv (the JSON lines' fields, one row per model and batch) and
dp_step.png (milliseconds per step, private and not, both libraries) there.
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, rng_batch, same_weights, time_pair, torch_module

import argparse
import os
import sys
import warnings

from _common import emit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from _nn_example import write_csv  # noqa: E402

import pullback
import pullback.nn.functional as F
from pullback import nn, optim
from pullback.dp import DPOptimizer, GradSampleModule, RDPAccountant

_parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
_parser.add_argument("--batches", type=int, nargs="+", default=[64, 256])
_parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=["mlp", "cnn"])
_parser.add_argument("--out", help="write dp_step.csv and dp_step.png to this folder")
ARGS, _ = _parser.parse_known_args(sys.argv[1:])
SIGMA, CLIP, LR = 1.0, 1.0, 0.05
PLAIN_TARGET = 1.1  # the non-private step against PyTorch's (issue 41)


def build(mod, name: str):
    """examples/fashion_mnist_mlp.py's and examples/fashion_mnist_cnn.py's models."""
    if name == "mlp":
        return mod.Sequential(mod.Flatten(), mod.Linear(784, 512), mod.ReLU(), mod.Dropout(0.2),
                              mod.Linear(512, 256), mod.ReLU(), mod.Dropout(0.2),
                              mod.Linear(256, 10))
    return mod.Sequential(mod.Conv2d(1, 16, 3, padding=1), mod.ReLU(), mod.MaxPool2d(2),
                          mod.Conv2d(16, 32, 3, padding=1), mod.ReLU(), mod.MaxPool2d(2),
                          mod.Flatten(), mod.Dropout(0.25), mod.Linear(32 * 7 * 7, 128),
                          mod.ReLU(), mod.Dropout(0.25), mod.Linear(128, 10))


def pullback_step(name: str, x_np, y_np, torch_model, private: bool):
    model = build(nn, name)
    same_weights(model, torch_model)
    x, y = pullback.from_numpy(x_np), pullback.from_numpy(y_np)
    if private:
        model = GradSampleModule(model)
        opt = DPOptimizer(optim.SGD(model.parameters(), lr=LR), module=model,
                          noise_multiplier=SIGMA, max_grad_norm=CLIP,
                          expected_batch_size=x.shape[0], accountant=RDPAccountant(),
                          sample_rate=x.shape[0] / 60_000)
    else:
        opt = optim.SGD(model.parameters(), lr=LR)

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def opacus_step(torch, name: str, x_np, y_np, torch_model, private: bool):
    model = build(torch.nn, name)
    model.load_state_dict(torch_model.state_dict())
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    if private:
        from opacus import GradSampleModule as OpacusModule
        from opacus.accountants import RDPAccountant as OpacusRDP
        from opacus.optimizers import DPOptimizer as OpacusOptimizer

        model = OpacusModule(model)
        opt = OpacusOptimizer(torch.optim.SGD(model.parameters(), lr=LR), noise_multiplier=SIGMA,
                              max_grad_norm=CLIP, expected_batch_size=x.shape[0])
        opt.attach_step_hook(OpacusRDP().get_optimizer_hook_fn(sample_rate=x.shape[0] / 60_000))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def main() -> None:
    torch = torch_module()
    try:
        import opacus  # noqa: F401
    except ImportError:
        emit(skipped="opacus is not installed (pip install torch==2.13.0 opacus)")
        return
    warnings.filterwarnings("ignore", message="Full backward hook")  # torch, on Opacus's hooks
    rows: list[dict] = []
    for name in ARGS.models:
        for batch in ARGS.batches:
            torch.manual_seed(0)
            pullback.manual_seed(0)
            x_np, y_np = rng_batch((batch, 1, 28, 28), 10)
            reference = build(torch.nn, name)
            times = {}
            for private in (True, False):
                times[private] = time_pair(pullback_step(name, x_np, y_np, reference, private),
                                           opacus_step(torch, name, x_np, y_np, reference, private),
                                           warmup=2, repeats=5, block=3)
            (dp_ours, dp_theirs), (plain_ours, plain_theirs) = times[True], times[False]
            row = dict(benchmark="dp_step", model=name, batch=batch, threads=OPTIONS.threads,
                       clock=OPTIONS.clock, order=OPTIONS.order,
                       pullback_dp_ms=round(dp_ours * 1e3, 2),
                       opacus_dp_ms=round(dp_theirs * 1e3, 2),
                       time_vs_opacus=round(dp_ours / dp_theirs, 3),
                       meets_target=dp_ours <= dp_theirs,
                       pullback_plain_ms=round(plain_ours * 1e3, 2),
                       torch_plain_ms=round(plain_theirs * 1e3, 2),
                       plain_ratio=round(plain_ours / plain_theirs, 3),
                       plain_target=PLAIN_TARGET,
                       plain_meets_target=plain_ours / plain_theirs <= PLAIN_TARGET,
                       pullback_dp_overhead=round(dp_ours / plain_ours, 2),
                       opacus_dp_overhead=round(dp_theirs / plain_theirs, 2))
            emit(**row)
            rows.append(row)
    if ARGS.out and rows:
        os.makedirs(ARGS.out, exist_ok=True)
        write_csv(os.path.join(ARGS.out, "dp_step.csv"), rows)
        plot(os.path.join(ARGS.out, "dp_step.png"), rows)


def plot(path: str, rows: list[dict]) -> None:
    """Grouped bars: per model and batch, ms per step of each library, private and not."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = [("pullback_dp_ms", "pullback.dp"), ("opacus_dp_ms", "Opacus"),
            ("pullback_plain_ms", "pullback, non-private"),
            ("torch_plain_ms", "PyTorch, non-private")]
    width = 0.2
    fig, ax = plt.subplots(figsize=(7, 4))
    for k, (key, label) in enumerate(bars):
        ax.bar([i + (k - 1.5) * width for i in range(len(rows))], [r[key] for r in rows], width,
               label=label, hatch="" if k < 2 else "//", alpha=1.0 if k < 2 else 0.6)
    ax.set_xticks(range(len(rows)), [f"{r['model'].upper()}, batch {r['batch']}" for r in rows])
    ax.set_ylabel(f"ms per step ({rows[0]['clock']} time, {rows[0]['threads']} thread(s))")
    ax.set_yscale("log")
    ax.set_title("One DP-SGD step: pullback.dp against Opacus (CPU)")
    ax.grid(axis="y", alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
