"""OpenMP in the exported C: pragmas only where measurement says they pay.

An export compiles with and without ``-fopenmp``; without it the macros below are empty (no
unknown-pragma warnings under ``-Wall -Werror``). ``PB_OMP_SIMD`` marks the inner loop of the
matrix products and convolutions: without fast-math, GCC at ``-O2`` vectorizes a loop only
when its trip count is a multiple of the vector width, and ``omp simd`` lets it vectorize the
others with a remainder loop (the arithmetic is unchanged: these loops sum nothing across
iterations). ``PB_OMP_PARALLEL_FOR`` splits the rows of a product between threads, which pays
only for large products: starting a parallel region costs microseconds, more than a small layer
takes. :data:`PARALLEL_MIN_WORK` is an estimate from that cost (a few microseconds against
about a millisecond of work), not yet a measurement: ``benchmarks/compiler_export_c.py
--openmp`` times the C with ``-fopenmp`` next to the serial build, to be run on a quiet
machine with several cores.
"""

from __future__ import annotations

PRELUDE = """#if defined(_OPENMP)
#define PB_OMP_SIMD _Pragma("omp simd")
#define PB_OMP_PARALLEL_FOR _Pragma("omp parallel for schedule(static)")
#else
#define PB_OMP_SIMD
#define PB_OMP_PARALLEL_FOR
#endif
"""

# multiply-adds of one product below which the threads cost more than they save (estimated)
PARALLEL_MIN_WORK = 4_000_000


def simd() -> str:
    """The pragma line before a vectorizable inner loop."""
    return "PB_OMP_SIMD"


def parallel_for(work: int) -> str | None:
    """The pragma line before a loop over rows doing ``work`` multiply-adds, where it pays."""
    return "PB_OMP_PARALLEL_FOR" if work >= PARALLEL_MIN_WORK else None
