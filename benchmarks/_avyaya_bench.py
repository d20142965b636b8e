"""Shared pieces of the avyaya benchmarks (on top of _nn_bench.py, imported first for its
``--threads`` option): peak memory of one call, traced (tracemalloc for pullback, the profiler's
allocation events for PyTorch) and as the kernel's resident-set high-water mark, and the CSV
and plot files written under docs/avyaya/.

A step to measure is a pair ``(reset, work)``: ``reset`` drops the gradients of the step before
(outside the measurement), ``work`` is the step itself, which allocates them again.
"""

from __future__ import annotations

import ctypes
import gc
import os
import tracemalloc
from typing import Any, Callable

# The resident-set figures count pages: with the heap's 2 MiB pages (pullback._host_memory) they
# would move in 2 MiB steps and by what the kernel copies into huge pages (in a before/after run
# of avyaya_memory.py, depths 10 and 50, the smallest saving by RSS fell from 4 % to -6 % while
# the traced savings were identical); these benchmarks keep 4 KiB pages. Set before pullback
# loads.
os.environ.setdefault("PULLBACK_HUGE_PAGES", "0")

from _nn_bench import OPTIONS  # noqa: F401 - applies --threads before NumPy loads
from _common import write_csv  # noqa: F401 - the avyaya benchmarks import it from here

MIB = 2 ** 20


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _release_free_heap() -> None:
    """Hand the allocator's free pages back to the system (pullback keeps freed arrays in the
    process for reuse), so that the next resident-set peak counts only what the call needs."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def rss_peak(fn: Callable[[], Any], setup: Callable[[], Any] = lambda: None) -> int | None:
    """Bytes by which the resident set's high-water mark rises above its level before ``fn()``,
    measured after ``setup()`` (Linux: the mark is reset through /proc/self/clear_refs);
    ``None`` where it cannot be."""
    setup()
    _release_free_heap()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current resident set
        before = _status_kib("VmRSS")
    except OSError:
        return None
    fn()
    return (_status_kib("VmHWM") - before) * 1024


def traced_peak(fn: Callable[[], Any], setup: Callable[[], Any] = lambda: None) -> int:
    """Peak bytes that ``fn()`` allocates through Python's allocator (NumPy's arrays included;
    PyTorch's CPU tensors are not traced) above what was allocated after ``setup()``."""
    setup()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def torch_traced_peak(torch: Any, fn: Callable[[], Any],
                      setup: Callable[[], Any] = lambda: None) -> int:
    """PyTorch's counterpart of :func:`traced_peak`: the peak of the bytes its CPU allocator
    has out during ``fn()``, from the profiler's memory events (allocations positive, frees
    negative, in time order), above what was allocated before."""
    from torch.profiler import ProfilerActivity, profile

    setup()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"),
                    key=lambda e: e.start_ns())
    out = peak = 0
    for event in events:
        out += event.nbytes()
        peak = max(peak, out)
    return peak


def timed(step: tuple[Callable[[], Any], Callable[[], Any]]) -> Callable[[], None]:
    """``reset`` then ``work``, as one call to time."""
    reset, work = step

    def run() -> None:
        reset()
        work()
    return run


def mib(nbytes: int | None, less: int = 0) -> float | str:
    """MiB of ``nbytes - less`` for the CSV (empty where not measured)."""
    return "" if nbytes is None else round((nbytes - less) / MIB, 3)


def saved(peaks: dict[str, int], less: int = 0) -> float:
    """The share of the ordinary peak that the reversible one saves (both less ``less``)."""
    return round(1 - (peaks["reversible"] - less) / (peaks["ordinary"] - less), 4)


def pyplot() -> Any:
    """matplotlib's pyplot without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
