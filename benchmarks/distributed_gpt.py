"""GPT training throughput on 1 and 2 processes of this 2-core machine, with
pullback.distributed's DistributedDataParallel, and the communication share of each step.

The model and global batch are benchmarks/gpt_step.py's (vocab 65, block 64, width 128,
4 layers, 32 sequences per step). One process uses both cores (2 threads); two processes use
one core each, 16 sequences per rank, their gradients averaged by DDP. Reported: tokens per
second, the speed-up of 2 processes over 1, and the share of the step spent in communication
calls that overlapping did not hide (DDP's ``comm_seconds``).

    python benchmarks/distributed_gpt.py          # runs the 1- and 2-process cases in turn
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

GLOBAL_BATCH = 32


def worker(steps: int) -> None:
    import numpy as np

    import pullback
    from pullback import distributed as dist
    from pullback import optim
    from pullback.gpt import GPT, GPTConfig

    config = GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128,
                       dropout=0.0, bias=False)
    dist.init_process_group("mpi", timeout=600)
    rank, size = dist.get_rank(), dist.get_world_size()
    pullback.manual_seed(0)
    model = dist.DistributedDataParallel(GPT(config))
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    local = GLOBAL_BATCH // size
    rng = np.random.default_rng(rank)
    x = pullback.tensor(rng.integers(0, 65, (local, 64)))
    y = pullback.tensor(rng.integers(0, 65, (local, 64)))

    def step() -> None:
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    dist.barrier()
    model.comm_seconds = 0.0
    start = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"ranks": size, "seconds_per_step": seconds / steps,
                          "tokens_per_second": GLOBAL_BATCH * 64 * steps / seconds,
                          "comm_share": model.comm_seconds / seconds}), flush=True)
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.steps)
        return
    from _common import emit

    beside = Path(sys.executable).parent / "mpiexec"
    results = {}
    for ranks, threads in ((1, 2), (2, 1)):
        env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
               "PULLBACK_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore"}
        out = subprocess.run([str(beside), "-n", str(ranks), sys.executable, __file__, "--worker",
                              "--steps", str(args.steps)], capture_output=True, text=True,
                             env=env, check=True).stdout
        results[ranks] = json.loads(out.strip().splitlines()[-1])
        emit(benchmark="distributed_gpt", threads_per_rank=threads, **results[ranks])
    emit(benchmark="distributed_gpt_scaling",
         speedup_2_over_1=round(results[2]["tokens_per_second"] / results[1]["tokens_per_second"], 3),
         comm_share_2_ranks=round(results[2]["comm_share"], 3))


if __name__ == "__main__":
    main()
