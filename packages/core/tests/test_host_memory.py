"""The CPU backend keeps freed host memory for reuse (glibc's malloc tuned at import)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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
