"""``all_reduce``, with the lean path of its commonest call: synchronous, a contiguous CPU
tensor, over MPI.

The general path (:func:`pullback.distributed._collectives.general_all_reduce`) wraps every
collective in Request and Work objects, closures and list comprehensions, which cost about 10
us per call on this machine: a 1 KB all-reduce was 0.77 of raw mpi4py's bandwidth. The lean
path reduces the tensor's own array in place, keeping the group's timeout and the error naming
the dead ranks. It is compiled where it can be (:mod:`pullback.distributed._native`: one C
call that checks the array through the buffer protocol and calls MPI), else Python on mpi4py:

- on_timeout "raise": the non-blocking ``MPI_Iallreduce``, completed by the timed poll of
  :func:`pullback.distributed._backend.poll` (in C where compiled; with the GIL released),
  and the error past the timeout;
- on_timeout "abort": the blocking ``MPI_Allreduce`` (MPICH's is faster at some sizes: 5.6
  against 7.1 us at 4 KB here), its start announced to the group's watchdog thread, which
  ends the job if the call outlives the timeout.

Anything the lean path does not cover (async work, NCCL, non-contiguous tensors, dtypes MPI
cannot reduce natively, bad arguments) goes down the general path, which also raises the
errors. The public function is the lean path itself, not a wrapper around it: one Python call
less per all-reduce (0.09 us of 0.6 in one process here).
"""

from __future__ import annotations

import time
import weakref

import numpy as np

from pullback import Tensor

from . import _group
from ._backend import MPIBackend, wait_request
from ._collectives import ReduceOp, Work, general_all_reduce
from ._group import ProcessGroup

# The dtypes MPI reduces itself (float16, bfloat16 and bool are widened by the general path).
_NATIVE = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32,
                                          np.int64, np.uint8, np.uint16, np.uint32, np.uint64))

# The last array the Python lean path found fit, and its dtype. Loops reduce the same arrays
# again and again, and checking one is a third of that path's own cost; the reference is weak,
# so the memo keeps no memory alive. An ndarray's type and layout stay as they are while it
# lives (assigning .strides in place is deprecated); its .dtype can be reassigned, so it is
# compared.
_last_fit: tuple[weakref.ref[np.ndarray], np.dtype] | None = None
_monotonic = time.monotonic


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` over the group's ranks (sum, avg, max, min, product), in place on
    every rank."""
    # Every step here is paid on each call: the world is read in place, not through a call.
    g = _group._WORLD if group is None else group
    if g is not None and not async_op and isinstance(tensor, Tensor):
        lean = g.lean_native
        if lean is not None:
            index = lean.ops.get(op)
            done = False if index is None else lean.reduce(tensor.array, index)
            if done is not False:  # False: not covered, nothing was done
                if done is not True:  # MPI's error code, or None: past the timeout
                    if done is not None:
                        raise lean.error(done)
                    g.timed_out(f"all_reduce(op={op!r})")
                if op == "avg":
                    np.divide(tensor.array, g.size, out=tensor.array, casting="unsafe")
                tensor._version[0] += 1  # written in place, outside the graph
                return None
        elif g.lean_mpi is not None and _reduce_in_python(g, g.lean_mpi, tensor, op):
            return None
    return general_all_reduce(tensor, op, group, async_op)


def _fit(array: np.ndarray) -> bool:
    """Whether MPI can reduce ``array`` in place as it is: a C-contiguous NumPy array of a
    dtype MPI adds natively; remembered as the last array found fit."""
    global _last_fit
    if type(array) is not np.ndarray or not array.flags.c_contiguous or array.dtype not in _NATIVE:
        return False
    _last_fit = (weakref.ref(array), array.dtype)
    return True


def _reduce_in_python(g: ProcessGroup, mpi: MPIBackend, tensor: Tensor, op: str) -> bool:
    """The lean all-reduce through mpi4py, where the compiled one could not be built: True
    once done, False when not covered."""
    array = tensor.array
    mpi_op = mpi.ops.get(op)
    if mpi_op is None:
        return False
    last = _last_fit
    remembered = last is not None and last[1] is array.dtype and last[0]() is array
    if not remembered and not _fit(array):
        return False
    watch = g.watchdog
    if watch is None:
        request = mpi.comm.Iallreduce(mpi.in_place, array, op=mpi_op)
        # A small message is done at the first test: the wait (and its clock) only starts after.
        if not request.Test() and not wait_request(request, g.timeout):
            g.timed_out(f"all_reduce(op={op!r})")
    else:
        watch.op = op
        watch.since = _monotonic()
        try:  # mpi4py releases the GIL inside the call: the watchdog runs meanwhile
            mpi.comm.Allreduce(mpi.in_place, array, op=mpi_op)
        finally:  # an MPI error must not leave the watchdog armed
            watch.since = 0.0
    if op == "avg":
        np.divide(array, g.size, out=array, casting="unsafe")
    tensor._version[0] += 1  # written in place, outside the graph
    return True
