"""Per-sample gradients with pullback.func.vmap(grad): an MLP 784-256-10 and a small CNN at
batch 64 and 256 (float32), against a Python loop of per-sample backward passes (pullback's and
PyTorch's) and against torch.func.vmap(grad), in one process. JSON lines with ratios.

Targets (issue 18): at batch 256 on the MLP at least 10x faster than the loop, and no slower
than torch.func.

A batch of per-sample gradients is batch x parameters floats (206 MB for the MLP at 256), a new
array each call, so each record also gives the time this machine needs just to write that many
bytes (``write_floor_ms``: NumPy filling a fresh allocation, page faults included, the fastest
possible for a result that is a new array; ``write_floor_mapped_ms``: filling memory already
mapped) next to the time the 10x target allows (``target_10x_ms``). pullback and torch.func are
timed in alternating rounds (as are the two loops), so a busy spell hits both alike; the load
average is printed with each record. A first record times the MLP's weight gradient alone:
``func.outer``'s kernel against NumPy's broadcast multiply.

    python benchmarks/func_per_sample_grads.py                  # 2 threads, wall clock
    python benchmarks/func_per_sample_grads.py --clock cpu --threads 1   # on a busy machine
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, torch_module

import os
import time
from typing import Any, Callable

import numpy as np
from _common import best_time, best_times, emit

import pullback as pb
import pullback.nn as nn
import pullback.nn.functional as F
from pullback.func import functional_call, grad, vmap

_clock = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter


def best_seconds(fn: Callable[[], Any], repeats: int = 5, warmup: int = 2) -> float:
    return best_time(fn, repeats, warmup, clock=_clock)


def write_floor_seconds(nbytes: int) -> tuple[float, float]:
    """Seconds to write ``nbytes`` of float32 into a fresh allocation (what returning a new
    array costs at least: the OS zeroes each new page, then the values are written) and into
    memory already mapped (``fill``: memset's fastest stores)."""
    n = nbytes // 4
    mapped = np.zeros(n, dtype=np.float32)
    fresh = best_seconds(lambda: np.empty(n, dtype=np.float32).fill(1.0), 5, 1)
    return fresh, best_seconds(lambda: mapped.fill(1.0), 5, 1)


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
    rounds = 4 if batch == 256 else 6
    t_vmap, t_func = best_times(lambda: per_sample(params, x, t),
                                lambda: torch_per_sample(tparams, tx, tt),
                                rounds=rounds, repeat=2, clock=_clock)
    t_loop, t_torch_loop = best_times(loop, torch_loop, rounds=2, repeat=1, clock=_clock)
    loop_ratio = t_loop / t_vmap
    grad_bytes = batch * sum(int(np.prod(p.shape)) for p in params.values()) * 4
    floor_fresh, floor_mapped = write_floor_seconds(grad_bytes)
    emit(benchmark="func_per_sample_grads", model=name, batch=batch,
         threads=OPTIONS.threads, clock=OPTIONS.clock, load_average=os.getloadavg()[0],
         pullback_vmap_grad_ms=round(t_vmap * 1e3, 2),
         pullback_loop_ms=round(t_loop * 1e3, 2),
         torch_func_vmap_grad_ms=round(t_func * 1e3, 2),
         torch_loop_ms=round(t_torch_loop * 1e3, 2),
         speedup_vs_pullback_loop=round(loop_ratio, 2),
         speedup_vs_torch_loop=round(t_torch_loop / t_vmap, 2),
         time_vs_torch_func=round(t_vmap / t_func, 2),
         max_abs_diff_vs_torch_func=max_diff,
         per_sample_grads_mb=round(grad_bytes / 1e6, 1),
         write_floor_ms=round(floor_fresh * 1e3, 2),
         write_floor_mapped_ms=round(floor_mapped * 1e3, 2),
         write_bandwidth_gb_s=round(grad_bytes / floor_fresh / 1e9, 2),
         write_bandwidth_mapped_gb_s=round(grad_bytes / floor_mapped / 1e9, 2),
         target_10x_ms=round(t_loop / 10 * 1e3, 2),
         target_10x_vs_loop=(loop_ratio >= 10) if name.startswith("mlp") and batch == 256
         else None,
         target_not_slower_than_torch_func=t_vmap <= t_func)


def measure_outer_kernel(rng: np.random.Generator, batch: int = 256, m: int = 256,
                         n: int = 784) -> None:
    """The MLP's first-layer weight gradient alone: func.outer's kernel (the C loop) against
    NumPy's broadcast multiply of (B, m, 1) by (B, 1, n), the way vmap's matmul rule wrote it
    before."""
    from pullback.func._outer import OUTER

    kernel = OUTER.kernel_for("cpu")
    a = rng.standard_normal((batch, m)).astype(np.float32)
    c = rng.standard_normal((batch, n)).astype(np.float32)
    t_outer, t_numpy = best_times(lambda: kernel(a, c),
                                  lambda: np.multiply(a[:, :, None], c[:, None, :]),
                                  rounds=3, repeat=3, clock=_clock)
    emit(benchmark="func_outer_kernel", shape=[batch, m, n], threads=OPTIONS.threads,
         clock=OPTIONS.clock, load_average=os.getloadavg()[0],
         func_outer_ms=round(t_outer * 1e3, 2), numpy_broadcast_multiply_ms=round(t_numpy * 1e3, 2),
         speedup=round(t_numpy / t_outer, 2))


def main() -> None:
    torch = torch_module()
    rng = np.random.default_rng(0)
    measure_outer_kernel(rng)
    for name, (ours, theirs, shape) in models(torch).items():
        for k, v in theirs.state_dict().items():  # the same weights on both sides
            dict(ours.named_parameters())[k].array[...] = v.numpy()
        for batch in (64, 256):
            measure(torch, name, ours, theirs, shape, batch, rng)


if __name__ == "__main__":
    main()
