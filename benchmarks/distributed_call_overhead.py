"""What pullback's synchronous all_reduce costs per call over the bare MPI call, in one process
(world size 1, where a collective completes at once, so only the code around it is timed).

Sides, each on its own communicator, on the same 1 KB float32 buffers:

- ``raise_mode``: ``dist.all_reduce(t)`` on the world (``on_timeout="raise"``: the lean path's
  ``MPI_Iallreduce`` and its first ``Test``; one C call where the lean path is compiled, as
  the line's ``compiled_lean_path`` says, else mpi4py's);
- ``abort_mode``: ``dist.all_reduce(t, group=g)`` on a group made with ``on_timeout="abort"``
  (the lean path's blocking ``MPI_Allreduce``, its start announced to the watchdog);
- ``bare_iallreduce_test`` and ``bare_allreduce``: the same MPI calls from mpi4py, nothing
  around them;
- ``watchdog_stores``: the three attribute stores and the clock read that abort mode's lean
  path in Python adds around the call, alone (with a ``try``/``finally``, as there; the
  compiled path stores the start in C);
- ``empty_call``: a Python function that does nothing (what one call of any side costs).

The sides are interleaved within every repetition; each prints its best and median time per
call over the repetitions (the best is the least disturbed by other jobs on a shared machine),
and the line carries the 1-minute load average.

    python benchmarks/distributed_call_overhead.py
    PULLBACK_NATIVE=0 python benchmarks/distributed_call_overhead.py   # the lean path in Python
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=45)
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed block")
    args = parser.parse_args()

    import numpy as np
    from _common import emit
    from mpi4py import MPI

    import pullback
    from pullback import distributed as dist

    dist.init_process_group("mpi", timeout=600, on_timeout="raise")
    aborting = dist.new_group(on_timeout="abort")
    raw = MPI.COMM_WORLD.Dup()
    count = 256  # 1 KB of float32
    ours, ours_abort = pullback.ones(count), pullback.ones(count)
    blocking_buffer, nonblocking_buffer = np.ones(count, np.float32), np.ones(count, np.float32)
    watch = aborting.watchdog

    def watchdog_stores() -> None:
        watch.op = "sum"
        watch.since = time.monotonic()
        try:
            pass
        finally:
            watch.since = 0.0

    sides = {
        "raise_mode": lambda: dist.all_reduce(ours),
        "abort_mode": lambda: dist.all_reduce(ours_abort, group=aborting),
        "bare_iallreduce_test": lambda: raw.Iallreduce(MPI.IN_PLACE, nonblocking_buffer).Test(),
        "bare_allreduce": lambda: raw.Allreduce(MPI.IN_PLACE, blocking_buffer),
        "watchdog_stores": watchdog_stores,
        "empty_call": lambda: None,
    }
    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for rep in range(args.repetitions):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            fn = sides[name]
            start = time.perf_counter()
            for _ in range(args.calls):
                fn()
            times[name].append((time.perf_counter() - start) / args.calls)
        for array in (ours.array, ours_abort.array, blocking_buffer, nonblocking_buffer):
            array.fill(1.0)
    row = {"benchmark": "distributed_call_overhead", "bytes": count * 4,
           "repetitions": args.repetitions, "calls_per_block": args.calls,
           "load_avg_1min": round(load, 2),
           "compiled_lean_path": aborting.lean_native is not None}
    for name, values in times.items():
        row[f"{name}_best_us"] = round(min(values) * 1e6, 3)
        row[f"{name}_median_us"] = round(statistics.median(values) * 1e6, 3)
    best = {name: min(values) * 1e6 for name, values in times.items()}
    row["raise_over_bare_us"] = round(best["raise_mode"] - best["bare_iallreduce_test"], 3)
    row["abort_over_bare_us"] = round(best["abort_mode"] - best["bare_allreduce"], 3)
    row["watchdog_stores_us"] = round(best["watchdog_stores"] - best["empty_call"], 3)
    emit(**row)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
