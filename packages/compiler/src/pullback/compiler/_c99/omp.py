"""OpenMP in the exported C: a pragma only where it can pay.

An export compiles with and without ``-fopenmp``; without it the macro below is empty (no
unknown-pragma warnings under ``-Wall -Werror``). ``PB_OMP_PARALLEL_FOR`` splits the rows of a
product between threads, which pays only for large products: starting a parallel region costs
microseconds, more than a small layer takes. :data:`PARALLEL_MIN_WORK` is an estimate from that
cost (a few microseconds against about a millisecond of work), not yet a measurement:
``benchmarks/compiler_export_c.py --openmp`` times the C with ``-fopenmp`` next to the serial
build, to be run on a quiet machine with several cores.

There is no ``omp simd``: the kernels' inner loops have trip counts known at export time, and
GCC vectorizes them at ``-O2`` already. Measured (``--openmp --threads 1 --clock cpu``, where
``-fopenmp`` changes nothing but the simd pragmas the kernels had then): LeNet-5 at batch 1
63.2 us without them against 66.4 with, at batch 32 2259 against 2254; the MLP 38.1 against
38.3 and 754 against 765: no gain, so they went.
"""

from __future__ import annotations

PRELUDE = """#if defined(_OPENMP)
#define PB_OMP_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define PB_OMP_PARALLEL_FOR
#endif
"""

# multiply-adds of one product below which the threads cost more than they save (estimated)
PARALLEL_MIN_WORK = 4_000_000


def parallel_for(work: int) -> str | None:
    """The pragma line before a loop over rows doing ``work`` multiply-adds, where it pays."""
    return "PB_OMP_PARALLEL_FOR" if work >= PARALLEL_MIN_WORK else None
