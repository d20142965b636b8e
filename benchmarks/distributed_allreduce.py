"""All-reduce bandwidth of pullback.distributed against raw mpi4py on the same buffers, from
1 KB to 64 MB (float32, sum, in place), two processes (one per core). Target: pullback's
bandwidth at least 0.95 of mpi4py's at every size.

Four sides reduce in place (MPI_IN_PLACE), each on its own communicator:

- ``pullback``: ``dist.all_reduce(t)`` on the world, ``on_timeout="raise"`` (synchronous, a
  non-blocking all-reduce completed by a timed poll; past the timeout, a catchable error);
  its lean path is one C call per all-reduce where it could be compiled (every line says
  ``compiled_lean_path``), else Python on mpi4py;
- ``pullback_abort``: ``dist.all_reduce(t, group=g)`` on a group of every rank made with
  ``on_timeout="abort"`` (MPI's blocking all-reduce under the group's watchdog thread, which
  ends the job past the timeout);
- ``mpi4py``: the blocking ``comm.Allreduce(MPI.IN_PLACE, a)``, what a user of raw mpi4py
  writes, and the reference of the target;
- ``mpi4py_nonblocking``: ``comm.Iallreduce(MPI.IN_PLACE, a).Wait()``: the collective
  pullback starts, completed by MPI's own wait, with no Python around it (the comparison
  that isolates what pullback's own code and its timed wait cost).

The sides share the same buffers: one NumPy array per side (pullback's tensors wrap them with
``from_numpy``), and each repetition hands every side another one, so that each side reduces
each buffer equally often. MPI copies some buffers faster than others (their pages: huge or
not, where they lie); when every side had a buffer of its own, the side that happened to hold
a slow one lost up to a tenth at 16 MB, which the same code on another buffer did not.

Built for a loaded machine: the sides are interleaved within every repetition (a block of
calls each, after a barrier, in an order rotated from one repetition to the next), so a slow
spell of the machine hits all four alike, and each size is timed over many repetitions.
For each size the benchmark prints the median time per call of each side with its spread
(25th to 75th percentile over the repetitions), and the bandwidth ratio as the median of the
per-repetition ratios (pullback's time over the reference's, inverted), with its spread too:
``bandwidth_ratio`` and ``ratio_to_nonblocking`` for ``pullback``, ``abort_bandwidth_ratio``
and ``abort_ratio_to_nonblocking`` for ``pullback_abort``.
Bus bandwidth is 2 (n - 1) / n * bytes / time, the usual all-reduce figure. Every line
carries the 1-minute load average when the size started.

    python benchmarks/distributed_allreduce.py             # relaunches itself on 2 processes
    python benchmarks/distributed_allreduce.py --runs 3    # the whole sweep three times
    PULLBACK_NATIVE=0 python benchmarks/distributed_allreduce.py   # the lean path in Python
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _mpi_launch import relaunch_under_mpiexec

SIZES = [2**k for k in range(10, 27, 2)]  # 1 KB .. 64 MB
SIDES = ("pullback", "pullback_abort", "mpi4py", "mpi4py_nonblocking")


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def _plan(nbytes: int, scale: float) -> tuple[int, int]:
    """Calls per timed block (a block of small calls outlasts the barrier's skew between the
    ranks) and repetitions (about 2 GB reduced per side, 20 to 200 repetitions)."""
    calls = max(1, min(32, 2**18 // nbytes))
    reps = max(20, min(200, 2**31 // (nbytes * calls)))
    return calls, max(5, int(reps * scale))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1, help="sweeps over all sizes")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="multiplies the repetitions (0.2 for a quick look)")
    args = parser.parse_args()
    relaunch_under_mpiexec(args.ranks, threads_per_rank=1)

    import numpy as np
    from _common import emit
    from mpi4py import MPI

    import pullback
    from pullback import distributed as dist

    dist.init_process_group("mpi", timeout=600, on_timeout="raise")
    aborting = dist.new_group(on_timeout="abort")
    # The lean path in C (pullback.distributed._native), or in Python with PULLBACK_NATIVE=0.
    compiled = aborting.lean_native is not None
    blocking_comm, nonblocking_comm = MPI.COMM_WORLD.Dup(), MPI.COMM_WORLD.Dup()
    n, rank = blocking_comm.Get_size(), blocking_comm.Get_rank()

    def side_calls(nbytes: int) -> tuple[dict, list]:
        """Each side's call on a buffer, and the buffers (one per side, as NumPy arrays)."""
        count = nbytes // 4
        buffers = [np.ones(count, np.float32) for _ in SIDES]
        tensors = [pullback.from_numpy(b) for b in buffers]  # the same memory, for pullback
        calls = {"pullback": lambda i: dist.all_reduce(tensors[i]),
                 "pullback_abort": lambda i: dist.all_reduce(tensors[i], group=aborting),
                 "mpi4py": lambda i: blocking_comm.Allreduce(MPI.IN_PLACE, buffers[i]),
                 "mpi4py_nonblocking": lambda i: nonblocking_comm.Iallreduce(
                     MPI.IN_PLACE, buffers[i]).Wait()}
        return calls, buffers

    for run in range(args.runs):
        for nbytes in SIZES:
            load = os.getloadavg()[0]
            calls, reps = _plan(nbytes, args.scale)
            sides, buffers = side_calls(nbytes)
            for fn in sides.values():  # warm-up: first touches, MPI's lazy set-up
                for i in range(len(buffers)):
                    fn(i)
            for buffer in buffers:
                buffer.fill(1.0)
            times: dict[str, list[float]] = {s: [] for s in SIDES}
            for rep in range(reps):
                shift = rep % len(SIDES)
                order = SIDES[shift:] + SIDES[:shift]
                for side in order:
                    # every side reduces every buffer in turn (the docstring says why)
                    fn, buffer = sides[side], (SIDES.index(side) + shift) % len(buffers)
                    blocking_comm.Barrier()
                    start = time.perf_counter()
                    for _ in range(calls):
                        fn(buffer)
                    times[side].append((time.perf_counter() - start) / calls)
                    buffers[buffer].fill(1.0)  # values grow by n per call: no side overflows
            if rank != 0:
                continue
            row = {"benchmark": "distributed_allreduce", "run": run, "bytes": nbytes,
                   "ranks": n, "repetitions": reps, "calls_per_block": calls,
                   "load_avg_1min": round(load, 2), "compiled_lean_path": compiled}
            for side in SIDES:
                q1, med, q3 = _quartiles(times[side])
                row[f"{side}_us"] = round(med * 1e6, 2)
                row[f"{side}_us_iqr"] = [round(q1 * 1e6, 2), round(q3 * 1e6, 2)]
            row["pullback_gbps"] = round(2 * (n - 1) / n * nbytes / statistics.median(
                times["pullback"]) / 1e9, 3)
            for ours, prefix in (("pullback", ""), ("pullback_abort", "abort_")):
                for ref, key in (("mpi4py", "bandwidth_ratio"),
                                 ("mpi4py_nonblocking", "ratio_to_nonblocking")):
                    ratios = [r / p for p, r in zip(times[ours], times[ref])]
                    q1, med, q3 = _quartiles(ratios)
                    row[prefix + key] = round(med, 3)
                    row[f"{prefix}{key}_iqr"] = [round(q1, 3), round(q3, 3)]
            row["target_ratio"] = 0.95
            row["meets_target"] = row["bandwidth_ratio"] >= 0.95
            row["abort_meets_target"] = row["abort_bandwidth_ratio"] >= 0.95
            emit(**row)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
