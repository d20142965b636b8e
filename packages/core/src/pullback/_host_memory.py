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
resident memory stays near its peak instead of shrinking.

The heap's pages are also asked to be transparent huge pages (2 MiB) where the kernel leaves
that to the program (``/sys/kernel/mm/transparent_hugepage/enabled`` is ``madvise``, as on
Debian and Ubuntu). A step's arrays, a few hundred megabytes reused every step, then need a
512th of the TLB entries: with 4 KiB pages every kernel that streams a few megabytes through
the caches also walks the page tables. Measured with ``benchmarks/eager_targets.py``, the
medians of pullback's own step times over alternating runs without and with them
(docs/benchmarks.md, seventh round): the compiled GPT step 0.3-3.3 % faster (four runs), the
eager GPT step 1.9 and 9.2 % (two), the mnist net's 8.5 %. glibc extends the heap with
``brk``, and every extension is a new mapping that the advice does not cover, so the heap is
grown once by :data:`HEAP_RESERVE` (address space: pages are only backed where written) with
that much kept at its top for each later growth, and :func:`advise_heap_growth` (run by each
backward pass and each compiled program run) advises what was added since.

``PULLBACK_HUGE_PAGES=0`` keeps the heap's small pages (the malloc settings above stay);
``PULLBACK_MALLOC_TUNING=0`` leaves malloc and the heap alone; where malloc is not glibc's
(macOS, musl) nothing is changed.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path
from typing import Any

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's upper limit on 64-bit systems
TRIM_THRESHOLD = 256 << 20
# Free heap kept at the top past each growth: address space only, backed where written.
HEAP_RESERVE = 256 << 20
# A block below the mmap threshold, allocated and freed once so that the heap grows (by it and
# the reserve) before the advice; what glibc then trims leaves the reserve.
_GROWTH = 16 << 20
_MADV_HUGEPAGE, _MADV_COLLAPSE = 14, 25  # <sys/mman.h>
# Heap growth, counted as address range (each growth includes a fresh reserve), that is collapsed
# into huge pages per process: collapsing copies what was written there (about 1.2 ms per MiB
# here), and a program whose heap shrinks and grows back every step would pay that every step.
_COLLAPSE_BUDGET = 1 << 30
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")

_tuned: bool | None = None


class _HugePagedHeap:
    """The heap's end as last advised, and libc's ``sbrk`` and ``madvise``."""

    def __init__(self, sbrk: Any, madvise: Any, end: int) -> None:
        self.sbrk, self.madvise, self.end = sbrk, madvise, end
        self.collapse_left = _COLLAPSE_BUDGET

    def advise_growth(self) -> None:
        end = self.sbrk(0)
        if end is None or end == self.end:
            return
        if end > self.end:
            grown = end - self.end
            self.madvise(self.end, grown, _MADV_HUGEPAGE)
            if grown <= self.collapse_left:
                # What the program wrote there since the heap grew has small pages already:
                # copied into huge ones now (Linux 6.1 on), as the advice alone would leave
                # them to the kernel's slow background scan. A failure (an older kernel; the
                # heap shrank meanwhile) only leaves small pages.
                self.collapse_left -= grown
                self.madvise(self.end, grown, _MADV_COLLAPSE)
        self.end = end  # also after a trim: what grows back from there is a new mapping


_heap: list[_HugePagedHeap] = []  # one, once the heap is huge-paged


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
    tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    huge_pages = os.environ.get("PULLBACK_HUGE_PAGES", "1") != "0"
    if tuned and huge_pages and _huge_pages_on_advice():
        _advise_heap(libc)
    return tuned


def _huge_pages_on_advice() -> bool:
    """Whether the kernel backs memory with transparent huge pages where the program asks
    (``[madvise]``): with ``[always]`` it already does, with ``[never]`` asking changes nothing."""
    try:
        return "[madvise]" in _THP_SETTING.read_text()
    except OSError:
        return False


def _advise_heap(libc: ctypes.CDLL) -> None:
    """Grow the heap by :data:`HEAP_RESERVE`, keep that much at its top for later growths, and
    advise huge pages from its old end on."""
    sbrk, madvise = libc.sbrk, libc.madvise
    sbrk.argtypes, sbrk.restype = [ctypes.c_ssize_t], ctypes.c_void_p
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    libc.malloc.argtypes, libc.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    libc.free.argtypes, libc.free.restype = [ctypes.c_void_p], None
    if not libc.mallopt(_M_TOP_PAD, HEAP_RESERVE):
        return
    start = sbrk(0)
    if start is None:
        return
    libc.free(libc.malloc(_GROWTH))
    _heap.append(_HugePagedHeap(sbrk, madvise, -(-start // _PAGE) * _PAGE))
    advise_heap_growth()


def advise_heap_growth() -> None:
    """Advise huge pages for the heap that glibc added since the last call (a new mapping each
    time it grows); a no-op where the heap is not huge-paged (see the module's notes). Cheap:
    one ``sbrk(0)`` when the heap has not grown."""
    if _heap:
        _heap[0].advise_growth()
