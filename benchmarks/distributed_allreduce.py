"""All-reduce bandwidth of pullback.distributed against raw mpi4py on the same buffers, from
1 KB to 64 MB (float32, sum), two processes (one per core), in one run. Target: pullback's
bandwidth at least 0.95 of mpi4py's at every size.

Both sides reduce in place (MPI_IN_PLACE) on one communicator each; rounds alternate between
them, and each size reports the median time of its rounds. Bus bandwidth is
2 (n - 1) / n * bytes / time, the usual all-reduce figure.

    python benchmarks/distributed_allreduce.py            # relaunches itself on 2 processes
"""

from __future__ import annotations

import argparse
import statistics
import time

from _mpi_launch import relaunch_under_mpiexec

SIZES = [2**k for k in range(10, 27, 2)]  # 1 KB .. 64 MB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    relaunch_under_mpiexec(args.ranks, threads_per_rank=1)

    import numpy as np
    from _common import emit
    from mpi4py import MPI

    import pullback
    from pullback import distributed as dist

    dist.init_process_group("mpi", timeout=600)
    comm = MPI.COMM_WORLD
    n = comm.Get_size()
    for nbytes in SIZES:
        count = nbytes // 4
        ours_t = pullback.ones(count)
        raw = np.ones(count, dtype=np.float32)
        reps = max(1, min(200, 2**24 // nbytes))
        times = {"pullback": [], "mpi4py": []}
        for _ in range(args.rounds):
            for side in ("pullback", "mpi4py"):
                comm.Barrier()
                start = time.perf_counter()
                for _ in range(reps):
                    if side == "pullback":
                        dist.all_reduce(ours_t)
                    else:
                        comm.Allreduce(MPI.IN_PLACE, raw)
                times[side].append((time.perf_counter() - start) / reps)
                ours_t.array.fill(1.0)
                raw.fill(1.0)
        if comm.Get_rank() == 0:
            med = {k: statistics.median(v) for k, v in times.items()}
            bus = {k: 2 * (n - 1) / n * nbytes / v / 1e9 for k, v in med.items()}
            emit(benchmark="distributed_allreduce", bytes=nbytes, ranks=n,
                 pullback_us=round(med["pullback"] * 1e6, 2),
                 mpi4py_us=round(med["mpi4py"] * 1e6, 2),
                 pullback_gbps=round(bus["pullback"], 3), mpi4py_gbps=round(bus["mpi4py"], 3),
                 bandwidth_ratio=round(bus["pullback"] / bus["mpi4py"], 3), target_ratio=0.95,
                 meets_target=bus["pullback"] / bus["mpi4py"] >= 0.95)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
