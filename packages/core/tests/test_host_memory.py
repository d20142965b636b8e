"""The CPU backend keeps freed host memory for reuse (glibc's malloc tuned at import)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pullback._host_memory import _huge_pages_on_advice

# 50 rounds of a step's pattern: three 4 MiB arrays written, then all freed (glibc's defaults give
# the freed top of the heap back past twice the mmap threshold); prints the page faults taken
# after one warm-up round, and whether the tuning is on.
_CODE = """
import resource, numpy as np, pullback, pullback._host_memory as h
def rounds():
    for _ in range(50):
        arrays = [np.empty(1 << 20, dtype=np.float32) for _ in range(3)]
        for a in arrays:
            a.fill(1.0)
        del arrays, a
rounds()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
rounds()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, h.tune_malloc())
"""

glibc_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.confstr("CS_GNU_LIBC_VERSION") is None,
    reason="the tuning applies to glibc's malloc on Linux only")


def _faults_and_state(**env: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-c", _CODE], env={**os.environ, **env},
                          capture_output=True, text=True, check=True)
    faults, state = done.stdout.split()
    return int(faults), state


@glibc_linux
def test_freed_arrays_are_reused_without_page_faults():
    faults, state = _faults_and_state()
    assert state == "True"
    # 150 arrays of 1,024 pages each: glibc's defaults fault them in again every round
    assert faults < 1024, faults


@glibc_linux
def test_pullback_malloc_tuning_0_leaves_malloc_alone():
    faults, state = _faults_and_state(PULLBACK_MALLOC_TUNING="0")
    assert state == "False"
    assert faults > 10 * 1024, faults  # every array faulted in again: what the tuning avoids


# 96 arrays of 1 MiB written (NumPy itself advises huge pages for arrays of 4 MiB and more
# only); prints how much of the process's memory is in transparent huge pages, in MiB.
_HUGE_CODE = """
import numpy as np, pullback
pullback.randn(2)  # the CPU backend, which tunes malloc
arrays = [np.ones(1 << 18, dtype=np.float32) for _ in range(96)]
with open("/proc/self/smaps") as smaps:
    huge = sum(int(line.split()[1]) for line in smaps if line.startswith("AnonHugePages:"))
print(huge >> 10)
"""


def _huge_page_mib(**env: str) -> int:
    done = subprocess.run([sys.executable, "-c", _HUGE_CODE], env={**os.environ, **env},
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


huge_pages_on_advice = pytest.mark.skipif(
    not _huge_pages_on_advice(),
    reason="transparent huge pages are not left to the program's advice here "
           "(/sys/kernel/mm/transparent_hugepage/enabled is not [madvise])")


@glibc_linux
@huge_pages_on_advice
def test_heap_arrays_get_transparent_huge_pages():
    # 96 MiB of small-enough arrays from the heap: huge pages only where the heap was advised
    assert _huge_page_mib() >= 48
    assert _huge_page_mib(PULLBACK_HUGE_PAGES="0") < 16
    assert _huge_page_mib(PULLBACK_MALLOC_TUNING="0") < 16


@glibc_linux
@huge_pages_on_advice
@pytest.mark.parametrize("collapse_budget_mib, collapsed", [(1024, True), (0, False)])
def test_heap_growth_past_the_reserve_is_advised(collapse_budget_mib, collapsed):
    # Past the reserve the heap grows by a new mapping (the block and another reserve);
    # advise_heap_growth gives it huge pages, copying what was already written into them while
    # the process's collapse budget lasts: the new mapping's share in /proc/self/smaps.
    code = f"""
import numpy as np, pullback, pullback._host_memory as h
pullback.randn(2)
h._heap[0].collapse_left = {collapse_budget_mib} << 20
before = h._heap[0].end
arrays = [np.ones(1 << 18, dtype=np.float32) for _ in range(400)]  # 400 MiB > the reserve
h.advise_heap_growth()
grown, mapping, huge = h._heap[0].end - before, None, 0
with open("/proc/self/smaps") as smaps:
    for line in smaps:
        if "-" in line.split()[0] and not line.split()[0].endswith(":"):
            mapping = int(line.split("-")[0], 16)
        elif line.startswith("AnonHugePages:") and mapping is not None and mapping >= before:
            huge += int(line.split()[1]) << 10
print(grown >= h.HEAP_RESERVE, huge >= 64 << 20)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["True", str(collapsed)]


def test_each_backward_pass_advises_the_heaps_growth(monkeypatch):
    # the heap a forward pass grew gets huge pages before the backward's arrays land in it
    import pullback
    from pullback.autograd import engine

    calls = []
    monkeypatch.setattr(engine, "advise_heap_growth", lambda: calls.append(None))
    x = pullback.randn(3, requires_grad=True)
    for _ in range(2):
        (x * 2.0).sum().backward()
    assert len(calls) == 2
