"""Keep freed host memory in the process, so that the next array of the same size reuses it.

Every op allocates its output; a training step frees and reallocates the same few dozen sizes
each time. glibc's malloc serves blocks above its mmap threshold (128 KiB at first, raised only
as such blocks are freed) with a fresh ``mmap`` and returns them with ``munmap``, and gives the
top of the heap back to the system once 256 KiB of it are free. Either way the next array's
pages are faulted in again, about a microsecond per 4 KiB page on the project's machines: a
quarter of a millisecond per megabyte written, more than a ReLU costs. Measured
(``python benchmarks/nn_cnn.py``, LeNet-like step, batch 64): 15-17 ms with glibc's defaults,
8.3-9.5 ms with the settings below; PyTorch's time did not move.

So the CPU backend raises the mmap threshold to its maximum (32 MiB: larger blocks still come from
mmap) and keeps up to 256 MiB of free heap before trimming. The cost is that a process's
resident memory stays near its peak instead of shrinking. ``PULLBACK_MALLOC_TUNING=0`` leaves
malloc alone; where malloc is not glibc's (macOS, musl) nothing is changed.
"""

from __future__ import annotations

import ctypes
import os
import sys

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's upper limit on 64-bit systems
TRIM_THRESHOLD = 256 << 20

_tuned: bool | None = None


def tune_malloc() -> bool:
    """Apply the settings once per process; whether they are in effect."""
    global _tuned
    if _tuned is None:
        _tuned = _apply()
    return _tuned


def _apply() -> bool:
    if os.environ.get("PULLBACK_MALLOC_TUNING", "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - present in glibc only
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
