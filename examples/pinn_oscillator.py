"""A physics-informed network for the harmonic oscillator u'' + w^2 u = 0, u(0) = 1, u'(0) = 0.

    python examples/pinn_oscillator.py [--steps 4000] [--omega 2.0] [--t-max 3.0] [--out DIR]
        [--smoke]

The network u(t) (1-32-32-1, tanh) never sees the solution: its loss is the squared residual of
the equation at collocation points plus the two initial conditions. u' and u'' come from
``pullback.autograd.grad(..., create_graph=True)`` (a second derivative inside the loss, then a
third-order backward pass into the weights). The result is compared with the analytic solution
cos(w t). Writes history.csv, solution.csv and curves.png to --out (default runs/pinn_oscillator/).
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
from tqdm import trange

import pullback as pb
from pullback import nn, optim
from pullback.autograd import grad

from _example import example_parser, output_dir
from _nn_example import plot, write_csv


def derivatives(model: nn.Module, t: pb.Tensor) -> tuple[pb.Tensor, pb.Tensor, pb.Tensor]:
    """u, du/dt and d2u/dt2 at the points ``t`` (each point's output depends on it alone, so the
    gradient of the sum is the pointwise derivative)."""
    u = model(t)
    du = grad(u.sum(), t, create_graph=True)[0]
    d2u = grad(du.sum(), t, create_graph=True)[0]
    return u, du, d2u


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = example_parser(__doc__, __file__)
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--omega", type=float, default=2.0)
    parser.add_argument("--t-max", type=float, default=3.0)
    parser.add_argument("--points", type=int, default=128)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.smoke:  # far from converged: it checks the pipeline, not the fit
        args.steps = 60
    out = output_dir(args.out)
    w = args.omega

    pb.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                          nn.Linear(32, 1)).double()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    t0 = pb.zeros(1, 1, dtype="float64", requires_grad=True)
    grid = np.linspace(0.0, args.t_max, 400)
    history = []
    for step in trange(1, args.steps + 1, desc="pinn"):
        # Fresh random collocation points each step cover the interval without overfitting a grid.
        t = pb.uniform(0.0, args.t_max, (args.points, 1), dtype="float64", requires_grad=True)
        u, _, d2u = derivatives(model, t)
        residual = d2u + (w * w) * u
        u0, du0, _ = derivatives(model, t0)
        loss = (residual * residual).mean() + ((u0 - 1.0) ** 2).sum() + (du0 ** 2).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 50 == 0 or step == 1:
            with pb.no_grad():
                pred = model(pb.tensor(grid[:, None], dtype="float64")).numpy().ravel()
            history.append({"step": step, "loss": loss.item(),
                            "max_abs_error": float(np.abs(pred - np.cos(w * grid)).max())})

    with pb.no_grad():
        pred = model(pb.tensor(grid[:, None], dtype="float64")).numpy().ravel()
    exact = np.cos(w * grid)
    err = np.abs(pred - exact)
    write_csv(os.path.join(out, "history.csv"), history)
    write_csv(os.path.join(out, "solution.csv"),
              [{"t": float(a), "u_pinn": float(b), "u_exact": float(c)}
               for a, b, c in zip(grid, pred, exact)])
    plot(os.path.join(out, "curves.png"), list(grid), {"PINN u(t)": list(pred),
                                                        f"cos({w:g} t)": list(exact)},
         "t", f"u'' + {w * w:g} u = 0, u(0)=1, u'(0)=0")
    plot(os.path.join(out, "loss.png"), [h["step"] for h in history],
         {"loss": [h["loss"] for h in history],
          "max |u - cos(wt)|": [h["max_abs_error"] for h in history]}, "step",
         "PINN training (pullback)", log_y=True)
    summary = {"steps": args.steps, "omega": w, "t_max": args.t_max,
               "final_loss": history[-1]["loss"], "max_abs_error": float(err.max()),
               "rms_error": float(math.sqrt((err ** 2).mean())), "out": out}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
