"""Per-sample gradients with pullback.func.vmap(grad): an MLP 784-256-10 and a small CNN at
batch 64 and 256 (float32), against a Python loop of per-sample backward passes (pullback's and
PyTorch's) and against torch.func.vmap(grad), in one process. JSON lines with ratios.

Targets (issue 18): at batch 256 on the MLP at least 10x faster than the loop, and no slower
than torch.func.

    python benchmarks/func_per_sample_grads.py                  # 2 threads, wall clock
    python benchmarks/func_per_sample_grads.py --clock cpu --threads 1   # on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, torch_module

import time
from typing import Any, Callable

import numpy as np
from _common import best_time, emit

import pullback as pb
import pullback.nn as nn
import pullback.nn.functional as F
from pullback.func import functional_call, grad, vmap

_clock = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter


def best_seconds(fn: Callable[[], Any], repeats: int = 5, warmup: int = 2) -> float:
    return best_time(fn, repeats, warmup, clock=_clock)


def models(torch: Any) -> dict[str, tuple[Any, Any, tuple[int, ...]]]:
    mlp = (nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)),
           torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                               torch.nn.Linear(256, 10)), (784,))
    cnn = (nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 10)),
           torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                               torch.nn.Conv2d(8, 16, 3), torch.nn.ReLU(),
                               torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                               torch.nn.Linear(16 * 5 * 5, 10)), (1, 28, 28))
    return {"mlp_784_256_10": mlp, "cnn_small": cnn}


def measure(torch: Any, name: str, ours: Any, theirs: Any, shape: tuple[int, ...],
            batch: int, rng: np.random.Generator) -> None:
    """Time the four ways of getting per-sample gradients of one model at one batch size."""
    params = {k: v.detach() for k, v in ours.named_parameters()}
    tparams = {k: v.detach() for k, v in theirs.named_parameters()}

    def loss(p: Any, x: Any, t: Any) -> Any:
        return F.cross_entropy(functional_call(ours, p, (x.unsqueeze(0),)), t.unsqueeze(0))

    def torch_loss(p: Any, x: Any, t: Any) -> Any:
        out = torch.func.functional_call(theirs, p, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, t.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    torch_per_sample = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0, 0))
    x_np = rng.standard_normal((batch,) + shape).astype(np.float32)
    t_np = rng.integers(0, 10, batch)
    x, t = pb.tensor(x_np), pb.tensor(t_np)
    tx, tt = torch.from_numpy(x_np), torch.from_numpy(t_np)

    def loop() -> list[Any]:
        grads = []
        for i in range(batch):
            ours.zero_grad()
            F.cross_entropy(ours(x[i:i + 1]), t[i:i + 1]).backward()
            grads.append([p.grad for p in ours.parameters()])
        return grads

    def torch_loop() -> list[Any]:
        grads = []
        for i in range(batch):
            theirs.zero_grad()
            torch.nn.functional.cross_entropy(theirs(tx[i:i + 1]), tt[i:i + 1]).backward()
            grads.append([p.grad.clone() for p in theirs.parameters()])
        return grads

    ours_out = per_sample(params, x, t)
    theirs_out = torch_per_sample(tparams, tx, tt)
    max_diff = max(float(np.abs(ours_out[k].numpy() - theirs_out[k].numpy()).max())
                   for k in params)
    repeats = 3 if batch == 256 else 5
    t_vmap = best_seconds(lambda: per_sample(params, x, t), repeats)
    t_func = best_seconds(lambda: torch_per_sample(tparams, tx, tt), repeats)
    t_loop = best_seconds(loop, 2, 1)
    t_torch_loop = best_seconds(torch_loop, 2, 1)
    loop_ratio = t_loop / t_vmap
    emit(benchmark="func_per_sample_grads", model=name, batch=batch,
         threads=OPTIONS.threads, clock=OPTIONS.clock,
         pullback_vmap_grad_ms=round(t_vmap * 1e3, 2),
         pullback_loop_ms=round(t_loop * 1e3, 2),
         torch_func_vmap_grad_ms=round(t_func * 1e3, 2),
         torch_loop_ms=round(t_torch_loop * 1e3, 2),
         speedup_vs_pullback_loop=round(loop_ratio, 2),
         speedup_vs_torch_loop=round(t_torch_loop / t_vmap, 2),
         time_vs_torch_func=round(t_vmap / t_func, 2),
         max_abs_diff_vs_torch_func=max_diff,
         target_10x_vs_loop=(loop_ratio >= 10) if name.startswith("mlp") and batch == 256
         else None,
         target_not_slower_than_torch_func=t_vmap <= t_func)


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    for name, (ours, theirs, shape) in models(torch).items():
        for k, v in theirs.state_dict().items():  # the same weights on both sides
            dict(ours.named_parameters())[k].array[...] = v.numpy()
        for batch in (64, 256):
            measure(torch, name, ours, theirs, shape, batch, rng)


if __name__ == "__main__":
    main()
