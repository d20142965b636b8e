"""Learn the dynamics of a 2-D spiral with a neural ODE (torchdiffeq's ode_demo.py on pullback).

    python examples/neural_ode_spiral.py [--iterations 2000] [--method dopri5] [--no-adjoint]
        [--seed 0] [--out DIR] [--smoke]

The data is one trajectory of dy/dt = y^3 A (A a damped rotation) from y0 = (2, 0), sampled at
1,000 times over [0, 25]. The model is dy/dt = MLP(y^3) (2-50-2, tanh), trained on random
windows (20 starts, 10 consecutive times) with RMSprop and the L1 loss, gradients by the adjoint
method (or by backpropagation through the solver with --no-adjoint). Every --eval-every
iterations the whole trajectory is solved from y0 and scored.

Writes metrics.csv (iteration, window loss, whole-trajectory loss, evaluations of the vector
field, seconds) and trajectories.png (the true and learned trajectories in time and in the
phase plane, with the learned vector field) to --out (default runs/neural_ode_spiral/), and ends
with one JSON line.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

import pullback as pb
from pullback import nn, optim
from pullback.sutra import odeint, odeint_adjoint

from _example import example_parser, output_dir
from _nn_example import write_csv

TRUE_A = [[-0.1, 2.0], [-2.0, -0.1]]


class Field(nn.Module):
    """dy/dt = MLP(y^3): the cube is known structure, the MLP learns the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))
        self.calls = 0

    def forward(self, t, y):
        self.calls += 1
        return self.net(y ** 3)


def true_trajectory(t: pb.Tensor) -> pb.Tensor:
    a = pb.tensor(TRUE_A)
    with pb.no_grad():
        return odeint(lambda t, y: (y ** 3) @ a, pb.tensor([[2.0, 0.0]]), t, method="dopri5")


def windows(rng: np.random.Generator, true_y: pb.Tensor, t: pb.Tensor, size: int, length: int):
    """``size`` random windows of ``length`` consecutive times: starts, times, targets."""
    start = rng.choice(t.shape[0] - length, size, replace=False)
    y = true_y.numpy()
    return (pb.from_numpy(y[start]), t[:length],
            pb.from_numpy(np.stack([y[start + i] for i in range(length)])))


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = example_parser(__doc__, __file__)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--method", default="dopri5")
    parser.add_argument("--no-adjoint", action="store_true",
                        help="backpropagate through the solver instead of the adjoint")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    times = 1000
    if args.smoke:  # a few iterations on a shorter trajectory: seconds
        args.iterations, args.eval_every, times = 6, 3, 200
    out = output_dir(args.out)
    pb.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t = pb.linspace(0.0, 25.0 * times / 1000, times)
    true_y = true_trajectory(t)
    field = Field()
    optimizer = optim.RMSprop(field.parameters(), lr=1e-3)
    solve = odeint if args.no_adjoint else odeint_adjoint
    print(f"spiral: {times} times over [0, {float(t[-1]):g}]; field MLP 2-50-2 "
          f"({sum(p.numel() for p in field.parameters())} parameters); {args.method}, "
          f"{'backpropagation through the solver' if args.no_adjoint else 'adjoint'}")

    rows, start_time = [], time.perf_counter()
    for iteration in range(1, args.iterations + 1):
        y0, window_t, target = windows(rng, true_y, t, 20, 10)
        field.calls = 0
        loss = (solve(field, y0, window_t, method=args.method) - target).abs().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if iteration % args.eval_every == 0 or iteration == args.iterations:
            calls = field.calls
            with pb.no_grad():
                whole = float((odeint(field, true_y[0], t, method=args.method) - true_y).abs().mean())
            rows.append({"iteration": iteration, "window_loss": float(loss),
                         "trajectory_loss": whole, "field_evaluations": calls,
                         "seconds": round(time.perf_counter() - start_time, 1)})
            print(f"iteration {iteration}: window loss {float(loss):.4f}, whole-trajectory loss "
                  f"{whole:.4f}, {calls} evaluations, {rows[-1]['seconds']} s", flush=True)

    write_csv(os.path.join(out, "metrics.csv"), rows)
    with pb.no_grad():
        learned = odeint(field, true_y[0], t, method=args.method)
    plot(os.path.join(out, "trajectories.png"), t.numpy(), true_y.numpy()[:, 0],
         learned.numpy()[:, 0], field)
    summary = {"iterations": args.iterations, "trajectory_loss": rows[-1]["trajectory_loss"],
               "first_trajectory_loss": rows[0]["trajectory_loss"],
               "seconds": rows[-1]["seconds"], "out": out}
    print(json.dumps(summary))
    return summary


def plot(path: str, t: np.ndarray, true: np.ndarray, learned: np.ndarray, field: Field) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_phase, ax_field) = plt.subplots(1, 3, figsize=(15, 4.5))
    for k, name in enumerate("xy"):
        ax_t.plot(t, true[:, k], label=f"{name} true", lw=1.5)
        ax_t.plot(t, learned[:, k], "--", label=f"{name} learned", lw=1.5)
    ax_t.set(title="trajectories", xlabel="t")
    ax_t.legend()
    ax_phase.plot(true[:, 0], true[:, 1], label="true")
    ax_phase.plot(learned[:, 0], learned[:, 1], "--", label="learned")
    ax_phase.set(title="phase portrait", xlabel="x", ylabel="y", xlim=(-2, 2), ylim=(-2, 2))
    ax_phase.legend()
    grid = np.mgrid[-2:2:21j, -2:2:21j].reshape(2, -1).T.astype(np.float32)
    with pb.no_grad():
        rates = field(pb.tensor(0.0), pb.from_numpy(grid)).numpy()
    speed = np.linalg.norm(rates, axis=1, keepdims=True) + 1e-9
    ax_field.quiver(grid[:, 0], grid[:, 1], *(rates / speed).T, speed[:, 0], cmap="viridis")
    ax_field.set(title="learned vector field", xlabel="x", ylabel="y", xlim=(-2, 2), ylim=(-2, 2))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
