"""One GPT training step (forward, backward, AdamW), pullback vs the same model in PyTorch.

Model: vocab 65, block 64, width 128, 4 heads, 4 layers, batch 32, float32 (target, issue 41:
pullback at most 1.1x PyTorch's eager step; eager_targets.py times it in separate processes).
Also prints model-FLOPs utilization against this machine's measured float32 GEMM throughput, and
pullback's time per op (forward and backward).

Run: python benchmarks/gpt_step.py [--device cpu] [--profile] [--clock cpu] (``cpu``: process
CPU time of both sides, steadier than wall time on a busy machine).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import pullback as pb
import pullback.optim as optim
from _common import best_time, best_times, emit, gemm_provider, torch_or_exit
from pullback.gpt import GPT, GPTConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "gpt" / "tests"))

CONFIG = GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128, dropout=0.0,
                   bias=False)
BATCH = 32
TARGET = 1.1


def model_flops_per_step(cfg: GPTConfig, batch: int) -> float:
    """6 * params * tokens (matmuls, forward+backward) plus attention scores and values."""
    tokens = batch * cfg.block_size
    params = 12 * cfg.n_layer * cfg.n_embd**2 + cfg.vocab_size * cfg.n_embd
    attention = 12 * cfg.n_layer * cfg.block_size * cfg.n_embd  # per token, fwd+bwd
    return 6.0 * params * tokens + attention * tokens


def gemm_gflops(torch) -> float:
    """Measured float32 GEMM throughput of this machine at n = 1024: the better of PyTorch's
    (MKL, two threads) and pullback's matmul."""
    a = np.random.default_rng(0).standard_normal((1024, 1024)).astype(np.float32)
    ta, pa = torch.from_numpy(a), pb.tensor(a)
    t = min(best_time(lambda: ta @ ta, repeat=10), best_time(lambda: pa @ pa, repeat=10))
    return 2 * 1024**3 / t / 1e9


def model_gemm_rates(torch) -> None:
    """GFLOP/s of NumPy's and PyTorch's float32 GEMM on the shapes of the model's linear layers
    (tokens x in x out), to tell GEMM speed apart from everything around it."""
    tokens = BATCH * CONFIG.block_size
    width = CONFIG.n_embd
    rng = np.random.default_rng(0)
    for k, n in ((width, 3 * width), (width, 4 * width), (4 * width, width)):
        a = rng.standard_normal((tokens, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        flops = 2 * tokens * k * n
        emit(benchmark="gpt_linear_gemm", shape=[tokens, k, n],
             numpy_gflops=flops / best_time(lambda a=a, b=b: a @ b) / 1e9,
             torch_gflops=flops / best_time(lambda ta=ta, tb=tb: ta @ tb) / 1e9)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--profile", action="store_true", help="print pullback's time per op")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of 10 steps")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch = torch_or_exit()
    from torch_gpt import torch_twin

    pb.manual_seed(0)
    model = GPT(CONFIG).to(args.device)
    twin = torch_twin(model)
    tdev = "cuda" if args.device.startswith("cuda") else "cpu"
    twin.to(tdev)
    rng = np.random.default_rng(0)
    x = rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size))
    y = rng.integers(0, CONFIG.vocab_size, (BATCH, CONFIG.block_size))
    px, py = pb.tensor(x, device=args.device), pb.tensor(y, device=args.device)
    tx, ty = torch.from_numpy(x).to(tdev), torch.from_numpy(y).to(tdev)
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    topt = torch.optim.AdamW(twin.parameters(), lr=1e-3, weight_decay=0.1, foreach=True)

    def step_pb():
        _, loss = model(px, py)
        opt.zero_grad()
        loss.backward()
        opt.step()
        pb.synchronize(args.device)

    def step_torch():
        loss = twin(tx, ty)
        topt.zero_grad()
        loss.backward()
        topt.step()
        if tdev == "cuda":
            torch.cuda.synchronize()

    t_pb, t_torch = best_times(step_pb, step_torch, rounds=args.rounds, clock=clock)
    peak = gemm_gflops(torch)
    flops = model_flops_per_step(CONFIG, BATCH)
    emit(benchmark="gpt_step", device=args.device, batch=BATCH, config=CONFIG.to_dict(),
         pullback_ms=t_pb * 1e3, torch_ms=t_torch * 1e3, ratio=t_pb / t_torch, target=TARGET,
         meets_target=t_pb / t_torch <= TARGET,
         clock=args.clock, gemm=gemm_provider(),
         gemm_peak_gflops=peak, pullback_mfu=flops / t_pb / 1e9 / peak,
         torch_mfu=flops / t_torch / 1e9 / peak)
    if args.profile:
        from pullback.debug import profile

        with profile() as prof:
            step_pb()
        print(prof.table(row_limit=25))
        model_gemm_rates(torch)


if __name__ == "__main__":
    main()
