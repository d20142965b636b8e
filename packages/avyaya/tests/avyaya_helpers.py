"""What the avyaya tests share: a stack of each coupling kind, the ordinary (storing) path
through the same blocks, and copies of pullback networks in PyTorch for the oracles."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb
from pullback import Tensor, nn
from pullback.avyaya import AffineCoupling, Coupling, ReversibleBlock, ReversibleSequential
from pullback.avyaya import residual_mlp


def additive(features: int, depth: int, index: int) -> Coupling:
    half = features // 2
    return ReversibleBlock(residual_mlp(half, depth=depth), residual_mlp(half, depth=depth))


def affine(features: int, depth: int, index: int) -> Coupling:
    half = features // 2
    return AffineCoupling(nn.Sequential(residual_mlp(half, depth=depth), nn.Tanh()),
                          residual_mlp(half, depth=depth),
                          condition_on=("first", "second")[index % 2])


# One test block per registered coupling (a test checks that none is missing).
BUILDERS: dict[str, Callable[[int, int, int], Coupling]] = {"additive": additive,
                                                             "affine": affine}


def make_stack(kind: str, depth: int, features: int = 8, dtype: str = "float64",
               seed: int = 0, **options: Any) -> ReversibleSequential:
    pb.manual_seed(seed)
    blocks = [BUILDERS[kind](features, depth, i) for i in range(depth)]
    return ReversibleSequential(blocks, **options).to(dtype)


def ordinary(stack: ReversibleSequential, x: Tensor) -> tuple[Tensor, Tensor]:
    """The same blocks run one by one with ordinary autograd (every activation stored)."""
    log_det = pb.zeros(x.shape[0], dtype=x.dtype)
    for block in stack:
        out = block(x)
        if isinstance(out, tuple):
            x, block_log_det = out
            log_det = log_det + block_log_det
        else:
            x = out
    return x, log_det


def grads(model: nn.Module, *tensors: Tensor) -> list[np.ndarray]:
    """Copies of the gradients of ``tensors`` and of every parameter of ``model``."""
    return [t.grad.numpy().copy() for t in tensors] + [
        p.grad.numpy().copy() for p in model.parameters()]


def worst_relative(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """The largest ``max|a - b| / max|b|`` over pairs of arrays."""
    return max(float(np.abs(x - y).max() / max(np.abs(y).max(), 1e-300)) for x, y in zip(a, b))


def to_torch(torch: Any, module: nn.Module) -> Any:
    """A PyTorch copy (float64, same weights) of a network of Linear, ReLU, Tanh, Sequential."""
    if isinstance(module, nn.Sequential):
        return torch.nn.Sequential(*[to_torch(torch, m) for m in module])
    if isinstance(module, nn.Linear):
        out = torch.nn.Linear(module.in_features, module.out_features,
                              bias=module.bias is not None).double()
        with torch.no_grad():
            out.weight.copy_(torch.from_numpy(module.weight.detach().numpy()))
            if module.bias is not None:
                out.bias.copy_(torch.from_numpy(module.bias.detach().numpy()))
        return out
    for name in ("ReLU", "Tanh"):
        if isinstance(module, getattr(nn, name)):
            return getattr(torch.nn, name)()
    raise TypeError(f"no PyTorch copy for {type(module).__name__}")
