"""The lean all-reduce compiled: ``_csrc/lean_allreduce.c`` built by :func:`pullback.native.load`
into Python builtins that call the MPI library mpi4py loaded, one C call per all-reduce.

Why: in one process here mpi4py's ``Comm.Allreduce`` costs 0.85 us per 1 KB call and the
builtin 0.34 us, checks, watchdog timestamp and MPI included; between two processes the
Python lean path was 0.82-0.85 of raw mpi4py's bandwidth at 1 KB and the builtin 1.1 of it.

The source includes ``Python.h``: the loader puts this interpreter's header folder on the
include path (the folder names the Python version and ABI and is part of the build's cache key,
so another interpreter gets another build).
MPI's functions and handles come from mpi4py at run time (no ``mpi.h``), so one build serves
every MPI library. Without a C compiler, with ``PULLBACK_NATIVE=0``, or when the MPI library's
functions cannot be found, :func:`lean_allreduce` returns None and the lean path runs in Python.
"""

from __future__ import annotations

import ctypes
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

from pullback import native


_SOURCE = Path(__file__).parent / "_csrc" / "lean_allreduce.c"
# The buffer formats reduced in C: NumPy's native integer and floating types that MPI adds
# itself (float16, bfloat16 and bool are widened by the general path).
FORMATS = "bBhHiIlLqQfd"
# The raise mode's wait in C: tests before the deadline starts, and tests between two yields
# of the processor (pullback.distributed._backend.poll's loop, with its own counts: a test
# from C costs a fraction of one through mpi4py). Chosen in interleaved runs of 4 variants on
# the loaded 2-core machine: as fast as 64 and 8 (the Python poll's counts) when the two ranks
# had the cores, and when other processes kept both cores busy (MPI_Allreduce 4 times slower
# than usual) 1.38-1.64 of MPI_Allreduce at 1 KB and 0.88-1.01 at 4 KB, against 0.72-1.04 and
# 0.43-0.60: a rank that spins longer before yielding keeps its peer off a shared core.
EAGER_TESTS, TESTS_PER_YIELD = 8, 4
_lock = threading.Lock()
_make: list[Callable[[tuple], tuple] | None] = []  # filled once: the builder, or None


class LeanAllReduce(NamedTuple):
    """The builtins of one communicator.

    Attributes:
        reduce: ``reduce(array, op_index)``: True once reduced in place; False when not
            covered (not a writable C-contiguous buffer of a format in :data:`FORMATS`, or too
            large for an int count: nothing was done); an int, MPI's error code; None when the
            non-blocking call did not complete within the timeout (the caller raises).
        running: ``running()``: the seconds the blocking call has run (0.0 when none runs) and
            its op's index, for the watchdog thread.
        ops: op name -> op index (``"avg"`` is a sum; the caller divides).
        names: op index -> op name.
        error: MPI's exception for one of its error codes.
    """

    reduce: Callable[[Any, int], Any]
    running: Callable[[], tuple[float, int]]
    ops: dict[str, int]
    names: tuple[str, ...]
    error: Callable[[int], Exception]


def _builder() -> Callable[[tuple], tuple] | None:
    with _lock:
        if not _make:
            _make.append(None)
            include = Path(sysconfig.get_paths()["include"])
            library = None if not (include / "Python.h").exists() else native.load(
                f"distributed_lean_allreduce_{sys.implementation.cache_tag}", _SOURCE,
                include_dirs=(include,))
            if library is not None:
                # The Python calling convention: the builder makes Python objects, so it keeps
                # the GIL (a plain ctypes call releases it).
                _make[0] = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(
                    ("pullback_lean_allreduce_make", library))
    return _make[0]


def _mpi_functions() -> tuple[int, int, int] | None:
    """The addresses of MPI_Allreduce, MPI_Iallreduce and MPI_Test in the library mpi4py
    loaded (looked up through mpi4py's module, whose dependencies include it)."""
    from mpi4py import MPI

    try:
        library = ctypes.CDLL(MPI.__file__)
        allreduce, iallreduce, test = (
            ctypes.cast(getattr(library, name), ctypes.c_void_p).value
            for name in ("MPI_Allreduce", "MPI_Iallreduce", "MPI_Test"))
    except (OSError, AttributeError):
        return None
    if allreduce is None or iallreduce is None or test is None:
        return None
    return allreduce, iallreduce, test


def lean_allreduce(comm: Any, ops: dict[str, Any], blocking: bool,
                   timeout: float) -> LeanAllReduce | None:
    """The compiled lean all-reduce over the mpi4py communicator ``comm``, reducing with the
    mpi4py ops of ``ops`` (name -> op), blocking (``MPI_Allreduce``, abort mode) or not
    (``MPI_Iallreduce`` and the timed poll of :func:`pullback.distributed._backend.poll`, with
    :data:`EAGER_TESTS` and :data:`TESTS_PER_YIELD`, waiting ``timeout`` seconds: raise mode);
    None where it cannot be built."""
    from mpi4py import MPI

    make = _builder()
    functions = None if make is None else _mpi_functions()
    if make is None or functions is None:
        return None
    handle_size = MPI._sizeof(MPI.Comm)
    if {MPI._sizeof(cls) for cls in (MPI.Datatype, MPI.Op, MPI.Request)} != {handle_size}:
        return None  # an MPI whose handles differ in size: not covered by the C source
    names = tuple(ops)
    datatypes = tuple(MPI._typedict[c].handle for c in FORMATS)
    itemsizes = tuple(np.dtype(c).itemsize for c in FORMATS)
    reduce, running = make((functions, comm.handle, int(MPI.IN_PLACE),
                            tuple(ops[n].handle for n in names), FORMATS, datatypes, itemsizes,
                            handle_size, MPI._sizeof(MPI.Status), blocking, timeout, EAGER_TESTS,
                            TESTS_PER_YIELD))
    return LeanAllReduce(reduce, running, {n: i for i, n in enumerate(names)}, names,
                         MPI.Exception)
