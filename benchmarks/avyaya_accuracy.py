"""How exactly the reversible stack undoes itself, and how close its gradients are to ordinary
backpropagation through the same blocks, at 10, 100 and 500 blocks, in float64 and float32,
for both couplings, with branches scaled for depth (``residual_mlp``) and with PyTorch's
default initialization (whose stream grows with depth).

    python benchmarks/avyaya_accuracy.py --out docs/avyaya   # the committed figures

The seed claimed inversion "to machine precision (2.77e-16)". Errors are relative: the largest
absolute difference over the largest magnitude (of the input, or of the ordinary gradients).
"""

from __future__ import annotations

import argparse
import os

from _avyaya_bench import pyplot, write_csv  # first: --threads

import numpy as np

import pullback as pb
import pullback.nn as nn
from pullback.avyaya import AffineCoupling, ReversibleBlock, ReversibleSequential, residual_mlp

from _common import emit

SEED_ERROR = 2.77e-16


def branch(half: int, depth: int, scaled: bool) -> nn.Module:
    if scaled:
        return residual_mlp(half, depth=depth)
    return nn.Sequential(nn.Linear(half, half), nn.ReLU(), nn.Linear(half, half))


def make_stack(kind: str, depth: int, width: int, scaled: bool, dtype: str):
    pb.manual_seed(0)
    half = width // 2
    if kind == "additive":
        blocks = [ReversibleBlock(branch(half, depth, scaled), branch(half, depth, scaled))
                  for _ in range(depth)]
    else:
        blocks = [AffineCoupling(nn.Sequential(branch(half, depth, scaled), nn.Tanh()),
                                 branch(half, depth, scaled),
                                 condition_on=("first", "second")[i % 2]) for i in range(depth)]
    return ReversibleSequential(blocks).to(dtype)


def gradient_error(stack: ReversibleSequential, x_np: np.ndarray) -> float:
    """Relative difference of d(loss)/d(input and parameters), reversible against ordinary."""
    results = []
    for reversible in (True, False):
        stack.zero_grad()
        x = pb.tensor(x_np, requires_grad=True)
        if reversible:
            y, log_det = stack.forward_with_log_det(x)
        else:
            y, log_det = x, pb.zeros(x.shape[0], dtype=x.dtype)
            for block in stack:
                out = block(y)
                y, log_det = (out[0], log_det + out[1]) if isinstance(out, tuple) else (out, log_det)
        ((y * y).mean() - log_det.mean()).backward()
        results.append([x.grad.numpy()] + [p.grad.numpy() for p in stack.parameters()])
    with np.errstate(all="ignore"):  # an overflowing stack gives inf and NaN: reported so
        return float(np.max([np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)
                             for a, b in zip(*results)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="10,100,500")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--out", help="write reconstruction.csv and reconstruction.png here")
    args, _ = parser.parse_known_args()
    rows = []
    for scaled in (True, False):
        for kind in ("additive", "affine"):
            for dtype in ("float64", "float32"):
                for depth in (int(d) for d in args.depths.split(",")):
                    stack = make_stack(kind, depth, args.width, scaled, dtype)
                    x_np = np.random.default_rng(1).standard_normal(
                        (args.batch, args.width)).astype(dtype)
                    with np.errstate(all="ignore"):
                        err = stack.reconstruction_error(pb.tensor(x_np))
                        with pb.no_grad():
                            size = float(stack(pb.tensor(x_np)).abs().max().item())
                        grad_err = gradient_error(stack, x_np)
                    row = {"init": "residual_mlp" if scaled else "default", "coupling": kind,
                           "dtype": dtype, "depth": depth, "reconstruction_error": err,
                           "gradient_error": grad_err, "output_max_abs": size}
                    rows.append(row)
                    emit(benchmark="avyaya_accuracy", seed_error=SEED_ERROR,
                         eps=float(np.finfo(dtype).eps), **row)
    if args.out:
        write_csv(os.path.join(args.out, "reconstruction.csv"), rows)
        plot(rows, os.path.join(args.out, "reconstruction.png"))


def plot(rows, path: str) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, init in zip(axes, ("residual_mlp", "default")):
        for kind in ("additive", "affine"):
            for dtype, style in (("float64", "-o"), ("float32", "--s")):
                pts = [(r["depth"], r["reconstruction_error"]) for r in rows
                       if (r["init"], r["coupling"], r["dtype"]) == (init, kind, dtype)
                       and np.isfinite(r["reconstruction_error"])]
                if pts:
                    ax.plot(*zip(*pts), style, label=f"{kind}, {dtype}")
        for dtype in ("float64", "float32"):
            ax.axhline(float(np.finfo(dtype).eps), color="grey", lw=0.5, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("blocks")
        ax.set_title(f"branches: {init}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes:
        ax.set_ylabel("relative error of inverse(forward(x))")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
