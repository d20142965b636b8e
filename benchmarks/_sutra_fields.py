"""The pullback vector fields the sutra benchmarks share (the PyTorch twins are in
sutra_speed.py, which alone needs them)."""

from __future__ import annotations

from pullback import nn


class MLP64(nn.Module):
    """dy/dt = MLP(y), 2-64-64-2 with tanh: the "64-wide MLP vector field"."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                                 nn.Linear(64, 2))

    def forward(self, t, y):
        return self.net(y)


class Spiral(nn.Module):
    """torchdiffeq's ode_demo.py field: dy/dt = MLP(y**3), 2-50-2 with tanh."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 2))

    def forward(self, t, y):
        return self.net(y ** 3)
