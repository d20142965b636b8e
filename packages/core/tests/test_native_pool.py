"""The C thread pool behind pullback.native.run_rows (pullback._native_pool, _csrc/pool.c):
every row is run exactly once, whatever the thread count, the caller (several Python threads at
once, a forked child) or the kernel's argument types."""

from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
import pytest

import pullback as pb
from pullback import _native_pool, native

# Each row r adds 1 to count[r] and writes r * scale + shift to out[r]: a row run twice, or
# never, or with an argument unpacked into the wrong place, shows in the arrays.
KERNELS = r"""
#include <pthread.h>
#include <stdint.h>
void count_rows(int64_t lo, int64_t hi, int64_t *count, double *out, int64_t scale, float shift,
                double offset) {
    for (int64_t r = lo; r < hi; r++) {
        count[r] += 1;
        out[r] = (double)(r * scale) + shift + offset;
    }
}
void count_rows_all_pointers(int64_t lo, int64_t hi, int64_t *count, void *unused) {
    (void)unused;
    for (int64_t r = lo; r < hi; r++)
        count[r] += 1;
}
/* the thread of each row, after some work (so the caller's share outlasts the hand-off) */
void record_thread(int64_t lo, int64_t hi, uint64_t *thread) {
    for (int64_t r = lo; r < hi; r++) {
        volatile double x = 0;
        for (int i = 0; i < 20000; i++)
            x += i;
        thread[r] = (uint64_t)pthread_self();
    }
}
"""


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    source = tmp_path_factory.mktemp("pool") / "pool_test_kernels.c"
    source.write_text(KERNELS)
    library = native.load("pool_test_kernels", source)
    if library is None or _native_pool.runner(native.declare(library, "count_rows_all_pointers",
                                                             2)) is None:
        pytest.skip(f"native kernels unavailable here: {native.status()}")
    count_rows = library.count_rows
    count_rows.argtypes = [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 2 + [
        ctypes.c_int64, ctypes.c_float, ctypes.c_double]
    count_rows.restype = None
    count_rows.record_thread = native.declare(library, "record_thread", 1)
    return count_rows


@pytest.fixture
def threads():
    before = pb.get_num_threads()
    yield pb.set_num_threads
    pb.set_num_threads(before)


def _run(kernel, rows: int) -> tuple[np.ndarray, np.ndarray]:
    count = np.zeros(rows, dtype=np.int64)
    out = np.zeros(rows, dtype=np.float64)
    native.run_rows(kernel, rows, native.MIN_POOL_ELEMENTS, count.ctypes.data, out.ctypes.data,
                    3, 0.5, 0.25)
    return count, out


@pytest.mark.parametrize("n_threads", [1, 2, 3, 8])
@pytest.mark.parametrize("rows", [1, 2, 3, 7, 1000])
def test_every_row_runs_once_with_its_arguments(kernels, threads, n_threads, rows):
    threads(n_threads)
    for _ in range(20):  # repeated: a job handed out while a worker finishes the last one
        count, out = _run(kernels, rows)
        np.testing.assert_array_equal(count, np.ones(rows, dtype=np.int64))
        np.testing.assert_array_equal(out, np.arange(rows) * 3 + 0.75)


def test_rows_are_shared_with_a_worker_thread(kernels, threads):
    """With two threads some rows run outside the calling thread (the caller takes a share a
    worker has not claimed yet, so on a busy machine a call may run them all: one of many
    calls is enough)."""
    threads(2)
    record = kernels.record_thread
    rows = 64
    for _ in range(200):
        ids = np.zeros(rows, dtype=np.uint64)
        native.run_rows(record, rows, native.MIN_POOL_ELEMENTS, ids.ctypes.data)
        assert ids.min() > 0
        if len(set(ids.tolist())) == 2:
            return
    pytest.fail("no row ran on a pool worker in 200 calls")


def test_calls_from_several_python_threads_at_once(kernels, threads):
    """One job runs on the pool at a time; a second caller runs its rows itself."""
    threads(2)
    failures: list[str] = []

    def caller(seed: int) -> None:
        for i in range(200):
            rows = 50 + (seed * 31 + i * 17) % 900
            count, out = _run(kernels, rows)
            if count.min() != 1 or count.max() != 1 or out[-1] != (rows - 1) * 3 + 0.75:
                failures.append(f"caller {seed}, call {i}: rows miscounted")
                return

    callers = [threading.Thread(target=caller, args=(s,)) for s in range(4)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert failures == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_pool(kernels, threads):
    threads(2)
    _run(kernels, 1000)  # the parent's workers exist before the fork
    pid = os.fork()
    if pid == 0:  # the child: only the forking thread exists
        try:
            count, out = _run(kernels, 1000)
            ok = count.min() == count.max() == 1 and out[999] == 999 * 3 + 0.75
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_small_work_stays_in_the_calling_thread(kernels, threads, monkeypatch):
    threads(2)
    calls = []
    real = _native_pool.runner

    def spy(kernel):
        found = real(kernel)
        return None if found is None else (lambda *a: calls.append(a) or found(*a))

    monkeypatch.setattr(_native_pool, "runner", spy)
    count = np.zeros(4, dtype=np.int64)
    out = np.zeros(4)
    native.run_rows(kernels, 4, 8, count.ctypes.data, out.ctypes.data, 1, 0.0, 0.0)
    assert calls == [] and count.tolist() == [1, 1, 1, 1]
    native.run_rows(kernels, 4, native.MIN_POOL_ELEMENTS, count.ctypes.data, out.ctypes.data,
                    1, 0.0, 0.0)
    assert len(calls) == 1 and count.tolist() == [2, 2, 2, 2]


def test_python_callables_and_untyped_functions_have_no_pool_runner(kernels):
    assert _native_pool.runner(lambda lo, hi: None) is None
    untyped = ctypes.CDLL(None).strlen  # no argtypes: not the native convention
    assert _native_pool.runner(untyped) is None


@pytest.mark.parametrize("signature", ["", "i", "pidf", "ppppppppiiiiiiiiffd"])
def test_trampoline_sources_declare_each_argument_type(signature):
    source = _native_pool.trampoline_source(signature)
    for j, code in enumerate(signature):
        c_type = {"i": "int64_t", "p": "void *", "f": "float", "d": "double"}[code]
        assert f"{c_type} a{j}" in source
    assert f"a{len(signature)}" not in source


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("rows, row_size", [(5, 8), (1000, native.MIN_POOL_ELEMENTS)])
def test_arrays_given_as_objects_reach_the_kernel_as_their_data(kernels, threads, n_threads,
                                                                rows, row_size):
    """run_rows_of_arrays: C reads each array's data address, also a view's that starts inside
    its buffer; the rows around the views are untouched."""
    threads(n_threads)
    count = np.zeros(rows + 10, dtype=np.int64)
    out = np.full(rows + 10, -1.0)
    native.run_rows_of_arrays(kernels, (0, 1), rows, row_size, count[3:3 + rows],
                              out[7:7 + rows], 3, 0.5, 0.25)
    np.testing.assert_array_equal(count, [0] * 3 + [1] * rows + [0] * 7)
    np.testing.assert_array_equal(out[7:7 + rows], np.arange(rows) * 3 + 0.75)
    assert (out[:7] == -1.0).all() and (out[7 + rows:] == -1.0).all()


def test_arrays_go_through_their_addresses_where_the_pool_cannot_run(kernels, monkeypatch):
    monkeypatch.setattr(_native_pool, "runner", lambda kernel, arrays=(): None)
    count = np.zeros(6, dtype=np.int64)
    out = np.zeros(6)
    native.run_rows_of_arrays(kernels, (0, 1), 6, native.MIN_POOL_ELEMENTS, count, out, 2, 1.0,
                              0.0)
    assert count.tolist() == [1] * 6 and out.tolist() == [2.0 * r + 1.0 for r in range(6)]


def test_only_pointer_arguments_can_be_given_as_arrays(kernels):
    assert _native_pool.runner(kernels, (2,)) is None  # an int64 argument
    assert _native_pool.runner(kernels, (0, 1)) is not None


def test_trampolines_read_array_objects_at_the_data_field():
    source = _native_pool.trampoline_source("api", 16)
    assert "void * a0" in source and "*(void **)((char *)a0 + 16)" in source
    assert "void * a1" in source and "a1 + 16" not in source
