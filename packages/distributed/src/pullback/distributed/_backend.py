"""Communication backends: the collectives on backend arrays that a process group runs.

``MPIBackend`` drives mpi4py (MPI on CPU arrays; any MPI library: MPICH, Open MPI, a cluster's
own). ``NCCLBackend`` drives NCCL through CuPy for arrays on GPUs. Both start every collective
non-blocking and hand back a request, which :func:`spin_wait` completes with the group's
timeout (:func:`wait_request` for one bare mpi4py request: the lean all-reduce path of
:mod:`pullback.distributed._fastpath`). Arrays must be C-contiguous (the callers copy when they
are not).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import numpy as np

from .errors import DistributedError

# Reductions by name. AVG is a SUM divided by the group's size afterwards (MPI has none).
REDUCTIONS = ("sum", "avg", "max", "min", "product")

# dtypes MPI reductions cannot add natively are reduced in a wider type (float16 and ml_dtypes'
# bfloat16 in float32; bool as uint8), then cast back.
_WIDENED = {"float16": np.float32, "bfloat16": np.float32, "bool": np.uint8}


class Request:
    """A started collective: ``test()`` progresses it and says whether it is done, and
    ``finish()`` runs once it is done (copies results back, divides an average)."""

    def __init__(self, done: Callable[[], Any], finish: Callable[[], None] | None = None) -> None:
        self._done, self._finish = done, finish

    def test(self) -> bool:
        return bool(self._done())

    def finish(self) -> None:
        if self._finish is not None:
            self._finish()
            self._finish = None


class MPIBackend:
    """Collectives through mpi4py on a communicator (the world's or a sub-group's)."""

    name = "mpi"

    def __init__(self, comm: Any) -> None:
        from mpi4py import MPI

        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.in_place = MPI.IN_PLACE
        self.ops = {"sum": MPI.SUM, "avg": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN,
                    "product": MPI.PROD}

    @staticmethod
    def world() -> MPIBackend:
        """A backend over a duplicate of MPI_COMM_WORLD: pullback's messages never meet those
        of other MPI code in the same program."""
        from mpi4py import MPI

        return MPIBackend(MPI.COMM_WORLD.Dup())

    def _mpi_request(self, req: Any, finish: Any = None) -> Request:
        return Request(req.Test, finish)

    def all_reduce(self, array: np.ndarray, reduction: str) -> Request:
        wide = _WIDENED.get(array.dtype.name)
        # In place where MPI can add the dtype itself: no second buffer, no copy back.
        buffer = array if wide is None else array.astype(wide)
        req = self.comm.Iallreduce(self.in_place, buffer, op=self.ops[reduction])

        def finish() -> None:
            if reduction == "avg":
                np.divide(buffer, self.size, out=buffer, casting="unsafe")
            if buffer is not array:
                array[...] = buffer

        return self._mpi_request(req, finish)

    def broadcast(self, array: np.ndarray, src: int) -> Request:
        # Bytes (a uint8 view) broadcast any dtype, bfloat16 included.
        return self._mpi_request(self.comm.Ibcast(array.reshape(-1).view(np.uint8), root=src))

    def all_gather(self, array: np.ndarray) -> tuple[Request, np.ndarray]:
        out = np.empty((self.size, *array.shape), dtype=array.dtype)
        req = self.comm.Iallgather(array.reshape(-1).view(np.uint8), out.reshape(-1).view(np.uint8))
        return self._mpi_request(req), out

    def reduce_scatter(self, output: np.ndarray, stacked: np.ndarray, reduction: str) -> Request:
        wide = _WIDENED.get(stacked.dtype.name)
        send = stacked if wide is None else stacked.astype(wide)
        recv = np.empty(output.shape, dtype=send.dtype)
        req = self.comm.Ireduce_scatter_block(send, recv, op=self.ops[reduction])

        def finish() -> None:
            if reduction == "avg":
                np.divide(recv, self.size, out=recv, casting="unsafe")
            output[...] = recv

        return self._mpi_request(req, finish)

    def send(self, array: np.ndarray, dst: int, tag: int) -> Request:
        return self._mpi_request(self.comm.Isend(array.reshape(-1).view(np.uint8), dest=dst, tag=tag))

    def recv(self, array: np.ndarray, src: int, tag: int) -> Request:
        return self._mpi_request(self.comm.Irecv(array.reshape(-1).view(np.uint8), source=src,
                                                 tag=tag))

    def barrier(self) -> Request:
        return self._mpi_request(self.comm.Ibarrier())

    def all_gather_object(self, obj: Any) -> list[Any]:
        """Small Python values (host names, pids, parameter signatures), blocking. mpi4py
        pickles them for the wire; they never touch a file."""
        return self.comm.allgather(obj)

    def split(self, ranks: list[int]) -> Any:
        """A communicator over ``ranks`` (collective over this one; COMM_NULL elsewhere)."""
        return self.comm.Create_group(self.comm.Get_group().Incl(ranks))


class NCCLBackend:
    """Collectives through NCCL (CuPy's bindings) on CUDA arrays, one GPU per process; the NCCL
    unique id is broadcast over MPI (which also launches the processes)."""

    name = "nccl"

    def __init__(self, bootstrap: MPIBackend, device_index: int) -> None:
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as exc:
            raise DistributedError(f"backend 'nccl' needs CuPy with NCCL ({exc}); install "
                                   "pullback-cuda[cuda12] and run one process per GPU") from exc
        self._cupy, self._nccl, self._bootstrap = cupy, nccl, bootstrap
        self.rank, self.size = bootstrap.rank, bootstrap.size
        cupy.cuda.Device(device_index).use()
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = bootstrap.comm.bcast(uid, root=0)
        self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)
        self.stream = cupy.cuda.Stream(non_blocking=True)

    def _dtype(self, array: Any) -> int:
        n = self._nccl
        table = {"float16": n.NCCL_FLOAT16, "float32": n.NCCL_FLOAT32,
                 "float64": n.NCCL_FLOAT64, "int32": n.NCCL_INT32, "int64": n.NCCL_INT64,
                 "uint8": n.NCCL_UINT8, "int8": n.NCCL_INT8}
        if array.dtype.name not in table:
            raise DistributedError(f"nccl: dtype {array.dtype} is not supported")
        return table[array.dtype.name]

    def _op(self, reduction: str) -> int:
        n = self._nccl
        return {"sum": n.NCCL_SUM, "avg": n.NCCL_SUM, "max": n.NCCL_MAX, "min": n.NCCL_MIN,
                "product": n.NCCL_PROD}[reduction]

    def _started(self, finish: Any = None) -> Request:
        event = self.stream.record()
        return Request(lambda: event.done, finish)

    def all_reduce(self, array: Any, reduction: str) -> Request:
        self.comm.allReduce(array.data.ptr, array.data.ptr, array.size, self._dtype(array),
                            self._op(reduction), self.stream.ptr)

        def finish() -> None:
            if reduction == "avg":
                self._cupy.divide(array, self.size, out=array)

        return self._started(finish)

    def broadcast(self, array: Any, src: int) -> Request:
        self.comm.bcast(array.data.ptr, array.size, self._dtype(array), src, self.stream.ptr)
        return self._started()

    def all_gather(self, array: Any) -> tuple[Request, Any]:
        out = self._cupy.empty((self.size, *array.shape), dtype=array.dtype)
        self.comm.allGather(array.data.ptr, out.data.ptr, array.size, self._dtype(array),
                            self.stream.ptr)
        return self._started(), out

    def reduce_scatter(self, output: Any, stacked: Any, reduction: str) -> Request:
        self.comm.reduceScatter(stacked.data.ptr, output.data.ptr, output.size,
                                self._dtype(output), self._op(reduction), self.stream.ptr)

        def finish() -> None:
            if reduction == "avg":
                self._cupy.divide(output, self.size, out=output)

        return self._started(finish)

    def send(self, array: Any, dst: int, tag: int) -> Request:
        self.comm.send(array.data.ptr, array.size, self._dtype(array), dst, self.stream.ptr)
        return self._started()

    def recv(self, array: Any, src: int, tag: int) -> Request:
        self.comm.recv(array.data.ptr, array.size, self._dtype(array), src, self.stream.ptr)
        return self._started()

    def barrier(self) -> Request:
        self.stream.synchronize()
        return self._bootstrap.barrier()


# Tests before the wait starts yielding the processor (a message of a few KB is done by then),
# and tests between two yields after that.
EAGER_TESTS = 64
TESTS_PER_YIELD = 8
_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))


def poll(done: Callable[[], bool], timeout: float) -> bool:
    """Call ``done()`` until it says True (True), or give up after ``timeout`` seconds (False).

    MPI progresses a non-blocking collective only inside its calls, so the wait tests it
    without sleeping; after EAGER_TESTS it yields the processor every TESTS_PER_YIELD tests.
    On a loaded machine that yield lets a peer rank that shares this core run: polling
    without it made a 4 MB all-reduce 2 to 3 times slower than MPI_Allreduce here, and a
    background thread blocked in MPI_Wait instead (an earlier design) cost 40 to 110 us per
    hand-over. Yielding every 8 tests rather than after each kept large transfers progressing
    between yields (as fast or faster from 256 KB to 16 MB in interleaved runs).
    """
    for _ in range(EAGER_TESTS):
        if done():
            return True
    deadline = time.monotonic() + timeout
    while True:
        for _ in range(TESTS_PER_YIELD):
            if done():
                return True
        if time.monotonic() > deadline:
            return False
        _yield()


def spin_wait(requests: list[Request], timeout: float) -> bool:
    """Complete ``requests`` and finish them (True), or give up after ``timeout`` seconds
    (False)."""
    if not poll(lambda: all(r.test() for r in requests), timeout):
        return False
    for r in requests:
        r.finish()
    return True


def wait_request(request: Any, timeout: float) -> bool:
    """:func:`poll` one bare mpi4py request, without the :class:`Request` wrapper."""
    return poll(request.Test, timeout)
