"""A continuous normalizing flow (FFJORD) learns the density of two moons, trained with the adjoint.

    python examples/cnf_two_moons.py [--iterations 250] [--batch-size 128] [--width 64]
        [--seed 0] [--out DIR] [--smoke]

The flow carries a data point x at t = 0 to z at t = 1 along dz/dt = f(t, z) (an MLP of [z, t],
tanh), and the log-density along with it: d log p/dt = -tr(df/dz) (Chen et al. 2018), so
log p(x) = log N(z(1); 0, I) + integral of tr(df/dz). Training estimates the trace with
Hutchinson's estimator, e^T (df/dz) e for one Rademacher e per batch (Grathwohl et al. 2019,
FFJORD): one vector-Jacobian product instead of one per dimension. Gradients come from the
adjoint (odeint_adjoint, dopri5), which then differentiates that product again. The density
plot and the test score use the exact trace (two products: the data is 2-D).

Two moons come from scikit-learn's make_moons (generated, offline), standardized. Writes
metrics.csv (iteration, training NLL, evaluations of f forward and backward, seconds) and
density.png (the data, the learned density, samples from the flow) to --out (default
runs/cnf_two_moons/), and ends with one JSON line (test NLL in nats on 2,000 fresh points).
"""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np

import pullback as pb
from pullback import nn, optim
from pullback.sutra import odeint, odeint_adjoint

from _example import example_parser, output_dir, require
from _nn_example import write_csv

LOG_2PI = math.log(2 * math.pi)


class CNF(nn.Module):
    """d/dt [z, log p] = [f(t, z), -tr(df/dz)], the trace by Hutchinson or exactly."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, width), nn.Tanh(), nn.Linear(width, width),
                                 nn.Tanh(), nn.Linear(width, 2))
        self.probe: pb.Tensor | None = None  # Hutchinson's e; None: the exact trace
        self.calls = 0

    def velocity(self, t: pb.Tensor, z: pb.Tensor) -> pb.Tensor:
        return self.net(pb.cat([z, pb.ones_like(z[:, :1]) * t], axis=1))

    def forward(self, t: pb.Tensor, state: tuple[pb.Tensor, pb.Tensor]):
        self.calls += 1
        z, _ = state
        # The trace must stay differentiable only where a gradient will be taken of it (the
        # adjoint's backward pass); the forward solve runs without a graph.
        keep = pb.is_grad_enabled()
        with pb.enable_grad():
            if not z.requires_grad:
                z = z.detach()
                z.requires_grad = True
            dz = self.velocity(t, z)
            if self.probe is not None:
                (vjp,) = pb.autograd.grad(dz, [z], grad_outputs=self.probe, create_graph=keep)
                trace = (vjp * self.probe).sum(axis=1)
            else:
                trace = 0
                for i in range(2):
                    basis = pb.zeros_like(z)
                    basis[:, i] = 1.0
                    (row,) = pb.autograd.grad(dz, [z], grad_outputs=basis, create_graph=keep,
                                              retain_graph=True)
                    trace = trace + row[:, i]
        return dz, -trace


def log_density(flow: CNF, x: pb.Tensor, solve=odeint, **kwargs) -> pb.Tensor:
    """log p(x): carry (x, 0) to (z, -integral of the trace) and add the base log-density."""
    t = pb.tensor([0.0, 1.0])
    z, minus_trace = solve(flow, (x, pb.zeros(x.shape[0])), t, method="dopri5", rtol=1e-5,
                           atol=1e-5, **kwargs)
    return -0.5 * (z[-1] ** 2).sum(axis=1) - LOG_2PI - minus_trace[-1]


def moons(n: int, rng: np.random.Generator) -> np.ndarray:
    datasets = require("sklearn.datasets", "scikit-learn", "generating the two moons")
    x, _ = datasets.make_moons(n, noise=0.05, random_state=int(rng.integers(2 ** 31)))
    return ((x - [0.5, 0.25]) / [0.87, 0.5]).astype(np.float32)  # about zero mean, unit scale


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = example_parser(__doc__, __file__)
    parser.add_argument("--iterations", type=int, default=250)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    grid_size, test_points = 100, 2000
    if args.smoke:  # a few small iterations, a coarse plot: seconds
        args.iterations, args.batch_size, grid_size, test_points = 3, 64, 20, 200
    out = output_dir(args.out)
    pb.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    flow = CNF(args.width)
    optimizer = optim.Adam(flow.parameters(), lr=args.lr)
    print(f"FFJORD on two moons: f = MLP 3-{args.width}-{args.width}-2 "
          f"({sum(p.numel() for p in flow.parameters())} parameters), batch {args.batch_size}, "
          f"Adam(lr={args.lr}), Hutchinson trace, adjoint dopri5 (rtol = atol = 1e-5)")

    rows, start = [], time.perf_counter()
    for iteration in range(1, args.iterations + 1):
        x = pb.from_numpy(moons(args.batch_size, rng))
        flow.probe = pb.from_numpy(rng.choice([-1.0, 1.0], size=(args.batch_size, 2))
                                   .astype(np.float32))
        flow.calls = 0
        nll = -log_density(flow, x, odeint_adjoint).mean()
        forward_calls = flow.calls
        optimizer.zero_grad()
        nll.backward()
        optimizer.step()
        rows.append({"iteration": iteration, "train_nll": float(nll), "nfe_forward": forward_calls,
                     "nfe_backward": flow.calls - forward_calls,
                     "seconds": round(time.perf_counter() - start, 1)})
        if iteration % 50 == 0 or iteration in (1, args.iterations):
            print(f"iteration {iteration}: NLL {float(nll):.3f} nats, {forward_calls} + "
                  f"{rows[-1]['nfe_backward']} evaluations, {rows[-1]['seconds']} s", flush=True)

    flow.probe = None  # the exact trace from here on
    with pb.no_grad():
        test_nll = float(-log_density(flow, pb.from_numpy(moons(test_points, rng))).mean())
    write_csv(os.path.join(out, "metrics.csv"), rows)
    plot(os.path.join(out, "density.png"), flow, moons(2000, rng), grid_size, rng)
    summary = {"iterations": args.iterations, "test_nll": test_nll,
               "first_train_nll": rows[0]["train_nll"], "last_train_nll": rows[-1]["train_nll"],
               "seconds": rows[-1]["seconds"], "out": out}
    print(json.dumps(summary))
    return summary


def plot(path: str, flow: CNF, data: np.ndarray, grid_size: int, rng: np.random.Generator) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lim = 3.0
    axis = np.linspace(-lim, lim, grid_size, dtype=np.float32)
    grid = np.stack(np.meshgrid(axis, axis), axis=-1).reshape(-1, 2)
    with pb.no_grad():
        density = np.exp(log_density(flow, pb.from_numpy(grid)).numpy()).reshape(grid_size, -1)
        base = pb.from_numpy(rng.standard_normal((2000, 2)).astype(np.float32))
        samples = odeint(flow.velocity, base, pb.tensor([1.0, 0.0]), rtol=1e-5, atol=1e-5)[-1]
    fig, axes = plt.subplots(1, 3, figsize=(13.5, 4.5))
    axes[0].scatter(data[:, 0], data[:, 1], s=2)
    axes[0].set_title("data (two moons, standardized)")
    axes[1].imshow(density, origin="lower", extent=(-lim, lim, -lim, lim), cmap="magma")
    axes[1].set_title("learned density (exact trace)")
    samples = samples.numpy()
    axes[2].scatter(samples[:, 0], samples[:, 1], s=2, color="tab:orange")
    axes[2].set_title("samples: N(0, I) carried from t = 1 to 0")
    for ax in axes:
        ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
