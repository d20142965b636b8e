"""Solve + adjoint backward, pullback.sutra vs torchdiffeq on the CPU, in one process, for dopri5,
rk4 and tsit5 on two problems. Target: no slower than torchdiffeq (ratio <= 1).

- spiral: torchdiffeq's ode_demo.py training step: dy/dt = MLP(y**3) (2-50-2, tanh) on a batch
  of 20 spirals, 10 output times over [0, 0.225], L1 loss; rk4 at step 0.005.
- mlp64: dy/dt = MLP(y) (2-64-64-2, tanh) on a batch of 32 points over [0, 1], squared-norm
  loss; rtol 1e-5, atol 1e-7; rk4 at step 0.02.

torchdiffeq 0.2.5 has no tsit5: its reference runs torchdiffeq's adaptive Runge-Kutta machinery
with Tsitouras's tableau (the coefficients of pullback.sutra's table).

    python benchmarks/sutra_speed.py                          # 2 threads, wall clock
    python benchmarks/sutra_speed.py --threads 1 --clock cpu  # work per step, on a busy machine
"""

from __future__ import annotations

import importlib

from _nn_bench import report, same_weights, time_pair, torch_module
from _sutra_fields import MLP64, Spiral

import numpy as np

import pullback
from pullback.sutra import odeint_adjoint

TARGET = 1.0
SPIRAL_A = [[-0.1, 2.0], [-2.0, -0.1]]


def torch_tsit5(torch) -> None:
    """Register ``tsit5`` in torchdiffeq's solver table (the module is shadowed by its function)."""
    from torchdiffeq._impl.rk_common import RKAdaptiveStepsizeODESolver, _ButcherTableau

    from pullback.sutra._solvers.tsit5 import TABLEAU

    f64 = torch.float64
    mid = dict(TABLEAU.dense_weights(0.5))

    class TorchTsit5(RKAdaptiveStepsizeODESolver):
        order = 5
        tableau = _ButcherTableau(
            alpha=torch.tensor(TABLEAU.c, dtype=f64),
            beta=[torch.tensor(row, dtype=f64) for row in TABLEAU.a],
            c_sol=torch.tensor(TABLEAU.b, dtype=f64),
            c_error=torch.tensor(TABLEAU.b_error, dtype=f64))
        mid = torch.tensor([mid.get(i, 0.0) for i in range(len(TABLEAU.b))], dtype=f64)

    importlib.import_module("torchdiffeq._impl.odeint").SOLVERS["tsit5"] = TorchTsit5


def spiral_batch(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ode_demo.py's data: the true spiral at 1000 times over [0, 25], 20 random windows."""
    import torch
    import torchdiffeq

    t = torch.linspace(0.0, 25.0, 1000, dtype=torch.float32)
    a = torch.tensor(SPIRAL_A)
    with torch.no_grad():
        true_y = torchdiffeq.odeint(lambda t, y: torch.mm(y ** 3, a), torch.tensor([[2.0, 0.0]]),
                                    t, method="dopri5")
    rng = np.random.default_rng(seed)
    start = rng.choice(1000 - 10, 20, replace=False)
    batch_y0 = true_y[start].numpy()                               # (20, 1, 2)
    batch_t = t[:10].numpy()                                       # (10,)
    batch_y = np.stack([true_y[start + i].numpy() for i in range(10)])  # (10, 20, 1, 2)
    return batch_y0, batch_t, batch_y


def cases(torch, torchdiffeq):
    """(name, pullback step, torch step, details) for every problem and method."""
    y0_np, t_np, target_np = spiral_batch()
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((32, 2)).astype(np.float32)

    class TorchSpiral(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(2, 50), torch.nn.Tanh(),
                                           torch.nn.Linear(50, 2))

        def forward(self, t, y):
            return self.net(y ** 3)

    class TorchMLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(2, 64), torch.nn.Tanh(),
                                           torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                           torch.nn.Linear(64, 2))

        def forward(self, t, y):
            return self.net(y)

    problems = [
        ("spiral", Spiral, TorchSpiral, y0_np, t_np, {"rtol": 1e-7, "atol": 1e-9},
         {"step_size": 0.005},
         lambda pred, target: (pred - target).abs().mean(), target_np),
        ("mlp64", MLP64, TorchMLP, x_np, np.array([0.0, 1.0], dtype=np.float32),
         {"rtol": 1e-5, "atol": 1e-7}, {"step_size": 0.02},
         lambda pred, target: (pred[-1] ** 2).sum(), None),
    ]
    for name, ours_cls, torch_cls, y0, t, tol, fixed, loss_fn, target in problems:
        for method in ("dopri5", "rk4", "tsit5"):
            options = fixed if method == "rk4" else None
            ours, theirs = _steps(torch, torchdiffeq, ours_cls, torch_cls, y0, t, target, loss_fn,
                                  {"method": method, "options": options, **tol})
            yield f"{name}_{method}", ours, theirs, {"method": method, **tol, **(options or {})}


def _steps(torch, torchdiffeq, ours_cls, torch_cls, y0, t, target, loss_fn, kwargs):
    """One training step (solve, loss, adjoint backward) in each library, same weights."""
    pullback.manual_seed(0)
    torch.manual_seed(0)
    ours_f, torch_f = ours_cls(), torch_cls()
    same_weights(ours_f, torch_f)
    py0, pt, ty0, tt = pullback.from_numpy(y0), pullback.from_numpy(t), torch.from_numpy(y0), \
        torch.from_numpy(t)
    p_target = None if target is None else pullback.from_numpy(target)
    t_target = None if target is None else torch.from_numpy(target)

    def ours() -> None:
        ours_f.zero_grad()
        loss_fn(odeint_adjoint(ours_f, py0, pt, **kwargs), p_target).backward()

    def theirs() -> None:
        torch_f.zero_grad()
        loss_fn(torchdiffeq.odeint_adjoint(torch_f, ty0, tt, **kwargs), t_target).backward()

    return ours, theirs


def main() -> None:
    torch = torch_module()
    torchdiffeq = importlib.import_module("torchdiffeq")
    torch_tsit5(torch)
    for name, ours, theirs, details in cases(torch, torchdiffeq):
        ours_s, theirs_s = time_pair(ours, theirs, warmup=2, repeats=5, block=2)
        report(f"sutra_solve_adjoint_backward_{name}", ours_s, theirs_s, TARGET, **details)


if __name__ == "__main__":
    main()
