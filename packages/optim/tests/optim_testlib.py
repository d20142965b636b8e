"""Shared by the optim tests: a small MLP problem built twice (pullback and PyTorch) from the
same NumPy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback

SHAPES = {"w1": (5, 8), "b1": (8,), "w2": (8, 3), "b2": (3,)}


def initial_arrays(dtype: Any = np.float64, seed: int = 0) -> dict[str, np.ndarray]:
    """The MLP's starting weights."""
    rng = np.random.default_rng(seed)
    return {k: (rng.standard_normal(s) * 0.5).astype(dtype) for k, s in SHAPES.items()}


def batch(step: int, dtype: Any = np.float64) -> tuple[np.ndarray, np.ndarray]:
    """The inputs and targets of step ``step`` (a fresh batch every step, the same everywhere)."""
    rng = np.random.default_rng(1000 + step)
    return rng.standard_normal((16, 5)).astype(dtype), rng.standard_normal((16, 3)).astype(dtype)


def pullback_params(arrays: dict[str, np.ndarray]) -> dict[str, pullback.Tensor]:
    return {k: pullback.tensor(v, requires_grad=True) for k, v in arrays.items()}


def pullback_loss(params: dict[str, pullback.Tensor], step: int) -> pullback.Tensor:
    """Mean squared error of a 2-layer tanh MLP, computed by pullback's ops and autograd."""
    x, y = batch(step, params["w1"].dtype)
    hidden = (pullback.tensor(x) @ params["w1"] + params["b1"]).tanh()
    out = hidden @ params["w2"] + params["b2"]
    return ((out - pullback.tensor(y)) ** 2).mean()


def torch_loss(torch: Any, params: dict[str, Any], step: int) -> Any:
    """The same loss in PyTorch."""
    x, y = batch(step)
    hidden = torch.tanh(torch.from_numpy(x) @ params["w1"] + params["b1"])
    out = hidden @ params["w2"] + params["b2"]
    return ((out - torch.from_numpy(y)) ** 2).mean()
