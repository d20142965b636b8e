"""Process groups: the world made by :func:`init_process_group`, and sub-groups.

A group wraps one communication backend over a set of global ranks. Every collective has the
group's timeout: the general path's waits go through :meth:`ProcessGroup.wait`, and the lean
all-reduce path (:mod:`pullback.distributed._fastpath`) either polls with the timeout (on_timeout
"raise") or blocks in MPI under the group's :class:`~pullback.distributed._watchdog.Watchdog`
("abort").
"""

from __future__ import annotations

import atexit
import os
from datetime import timedelta
from typing import Any, Callable

from . import _native, _watchdog
from ._backend import MPIBackend, NCCLBackend, Request, spin_wait
from .errors import DistributedError

BACKENDS = ("mpi", "nccl")
DEFAULT_TIMEOUT = timedelta(minutes=30)  # torch.distributed's default
# What a collective past its timeout does: raise a catchable DistributedTimeoutError, or print
# it and end the job (torch's NCCL watchdog with TORCH_NCCL_ASYNC_ERROR_HANDLING).
ON_TIMEOUT = ("raise", "abort")
ON_TIMEOUT_VARIABLE = "PULLBACK_DISTRIBUTED_ON_TIMEOUT"

# Environment variables by which MPI launchers (and Slurm) tell a process its rank and size.
_LAUNCHER_VARIABLES = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                       ("PMIX_RANK", "PMIX_SIZE"), ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
                       ("SLURM_PROCID", "SLURM_NTASKS"))


def launched_world_size() -> int:
    """The number of processes a launcher (mpiexec, srun) started this one among, 1 if none."""
    for rank_var, size_var in _LAUNCHER_VARIABLES:
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[size_var])
    return 1


class ProcessGroup:
    """A set of processes that run collectives together.

    Attributes:
        backend: the communication backend's name (``"mpi"`` or ``"nccl"``).
        ranks: the global ranks of the members, in group-rank order.
        rank: this process's rank in the group (-1 if it is not a member).
        size: the number of members.
        timeout: seconds a collective may take before it is an error.
        on_timeout: ``"raise"`` (a collective past the timeout raises DistributedTimeoutError)
            or ``"abort"`` (it prints that error on stderr and ends the job).
    """

    def __init__(self, comm: Any, ranks: list[int], global_rank: int, timeout: float,
                 peers: list[_watchdog.Peer], backend: str = "mpi", device_index: int = 0,
                 on_timeout: str = "raise") -> None:
        self.ranks, self.timeout, self._peers = ranks, timeout, peers
        self.on_timeout = on_timeout
        self.global_rank = global_rank
        self.rank = ranks.index(global_rank) if global_rank in ranks else -1
        self.size = len(ranks)
        self.backend, self.device_index = backend, device_index
        self.broken = False
        self._impl: Any = None
        # The MPI backend of a healthy CPU group this process belongs to: what the lean
        # all-reduce path (_fastpath) runs on; None sends every call down the general path.
        self.lean_mpi: MPIBackend | None = None
        # In abort mode, the thread that watches the lean path's blocking all-reduces (None
        # in raise mode: the lean path then polls a non-blocking one with the timeout).
        self.watchdog: _watchdog.Watchdog | None = None
        # The lean path compiled (one C call per all-reduce), where it could be built; None:
        # the lean path runs in Python on mpi4py.
        self.lean_native: _native.LeanAllReduce | None = None
        if self.rank >= 0:
            mpi = MPIBackend(comm)
            self._impl = NCCLBackend(mpi, device_index) if backend == "nccl" else mpi
            self._mpi = mpi
            self.lean_mpi = mpi if backend == "mpi" else None
            abort = on_timeout == "abort" and self.lean_mpi is not None
            if self.lean_mpi is not None:
                self.lean_native = _native.lean_allreduce(mpi.comm, mpi.ops, abort, timeout)
            if abort:
                self.watchdog = _watchdog.Watchdog(
                    timeout, lambda what: self._end_job(what, from_main_thread=False),
                    f"pullback-distributed-watchdog(ranks={ranks})", self._native_running())

    def __repr__(self) -> str:
        return (f"ProcessGroup(backend={self.backend!r}, ranks={self.ranks}, rank={self.rank}, "
                f"timeout={self.timeout:g}, on_timeout={self.on_timeout!r})")

    def impl(self, what: str) -> Any:
        """The backend, for a member; a clear error otherwise."""
        if self._impl is None:
            raise DistributedError(f"{what}: rank {self.global_rank} is not a member of this "
                                   f"group (ranks {self.ranks})")
        if self.broken:
            raise DistributedError(f"{what}: the group is broken by an earlier timeout; "
                                   "destroy it and make a new one")
        return self._impl

    def wait(self, requests: list[Request], what: str) -> None:
        """Wait for started collectives with the group's timeout."""
        if not spin_wait(requests, self.timeout):
            self.timed_out(what)

    def timed_out(self, what: str) -> None:
        """Raise the DistributedTimeoutError of ``what`` naming the dead ranks, and mark the
        group (and the job) broken: the dead peer's collective can never complete. In abort
        mode, print that error and end the job instead."""
        if self.on_timeout == "abort":
            self._end_job(what, from_main_thread=True)
        self.broken = True
        self.lean_mpi = self.lean_native = None
        _mark_broken()
        raise self._timeout_error(what)

    def _timeout_error(self, what: str) -> Exception:
        return _watchdog.timeout_error(what, self.timeout, [self._peers[r] for r in self.ranks],
                                       self._peers[self.global_rank])

    def _end_job(self, what: str, from_main_thread: bool) -> None:
        error = self._timeout_error(what)
        _watchdog.end_job(f"{type(error).__name__}: {error}; ending the job "
                          "(on_timeout='abort')", self._mpi.comm, from_main_thread)

    def _native_running(self) -> Callable[[], tuple[float, str]] | None:
        """What the watchdog reads of the compiled lean path's running call (None: it reads
        the Python lean path's attributes)."""
        lean = self.lean_native
        if lean is None:
            return None

        def running() -> tuple[float, str]:
            seconds, index = lean.running()
            return seconds, f"all_reduce(op={lean.names[index]!r})"

        return running

    def stop_watchdog(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()

    def all_gather_object(self, obj: Any) -> list[Any]:
        """Small Python values from every member (over MPI, blocking)."""
        self.impl("all_gather_object")
        return self._mpi.all_gather_object(obj)


_WORLD: ProcessGroup | None = None  # the default group; read in place by the lean path
_BROKEN = False


def _mark_broken() -> None:
    global _BROKEN
    _BROKEN = True


def _abort_if_broken() -> None:
    # After a timeout the dead peer's collective stays pending, and MPI_Finalize at exit would
    # wait for it forever: end the job instead (the error has been printed by then).
    if _BROKEN:
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(1)


def _seconds(timeout: Any) -> float:
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    if seconds <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    return seconds


def _on_timeout(value: str | None, what: str) -> str:
    """``value``, or the environment's choice when None ("raise" if unset), checked."""
    source = "on_timeout"
    if value is None:
        value = os.environ.get(ON_TIMEOUT_VARIABLE, "raise")
        source = ON_TIMEOUT_VARIABLE
    if value not in ON_TIMEOUT:
        raise ValueError(f"{what}: {source} must be one of {ON_TIMEOUT}, got {value!r}")
    return value


def init_process_group(backend: str = "mpi", timeout: Any = DEFAULT_TIMEOUT,
                       device_index: int | None = None,
                       on_timeout: str | None = None) -> ProcessGroup:
    """Join the processes that the launcher started (``mpiexec -n K python train.py``, Slurm's
    ``srun``) into the world group.

    Args:
        backend: ``"mpi"`` (CPU tensors, through mpi4py) or ``"nccl"`` (CUDA tensors, through
            CuPy's NCCL, one GPU per process; MPI still starts the processes).
        timeout: how long a collective may wait (a ``timedelta`` or seconds); past it the
            collective raises a DistributedTimeoutError naming the ranks that died.
        device_index: the GPU of this process with ``"nccl"`` (default: the local rank modulo
            the number of GPUs).
        on_timeout: what a collective past the timeout does. ``"raise"``: raise the
            DistributedTimeoutError (catchable; every collective waits with a timed poll).
            ``"abort"``: print it on stderr and end the whole job with exit code 1 (MPI_Abort);
            synchronous all-reduces then run MPI's faster blocking call under a watchdog
            thread. None (default): the environment variable
            ``PULLBACK_DISTRIBUTED_ON_TIMEOUT``, else ``"raise"``. Sub-groups inherit it.
    """
    global _WORLD
    if backend not in BACKENDS:
        raise ValueError(f"init_process_group: backend must be one of {BACKENDS}, "
                         f"got {backend!r}")
    mode = _on_timeout(on_timeout, "init_process_group")
    if _WORLD is not None:
        raise DistributedError("init_process_group: the default process group is already "
                               "initialized (call destroy_process_group first)")
    seconds = _seconds(timeout)
    world = MPIBackend.world()
    peers = world.all_gather_object(_watchdog.this_peer(world.rank))
    if backend == "nccl" and device_index is None:
        local = [p for p in peers if p.host == peers[world.rank].host].index(peers[world.rank])
        device_index = local
    _WORLD = ProcessGroup(world.comm, list(range(world.size)), world.rank, seconds, peers,
                          backend, device_index or 0, mode)
    atexit.register(_abort_if_broken)
    return _WORLD


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave the default group (or forget ``group``); init_process_group may be called again."""
    global _WORLD
    target = _WORLD if group is None else group
    if target is not None:
        target.stop_watchdog()
    if group is None or group is _WORLD:
        _WORLD = None


def is_initialized() -> bool:
    return _WORLD is not None


def world(what: str = "this call") -> ProcessGroup:
    """The default group; a clear error before init_process_group."""
    if _WORLD is None:
        raise DistributedError(f"{what}: the default process group is not initialized; call "
                               "pullback.distributed.init_process_group() first (and launch "
                               "with mpiexec -n K)")
    return _WORLD


def resolve(group: ProcessGroup | None, what: str) -> ProcessGroup:
    return world(what) if group is None else group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (default: the world); -1 if it is not a member."""
    return resolve(group, "get_rank").rank


def get_world_size(group: ProcessGroup | None = None) -> int:
    return resolve(group, "get_world_size").size


def get_backend(group: ProcessGroup | None = None) -> str:
    return resolve(group, "get_backend").backend


def new_group(ranks: list[int] | None = None, timeout: Any = None,
              on_timeout: str | None = None) -> ProcessGroup:
    """A sub-group of the world over ``ranks`` (all ranks when None). Every rank of the world
    must call it, members or not, as in torch.distributed. ``timeout`` and ``on_timeout``
    (see :func:`init_process_group`) default to the world's."""
    base = world("new_group")
    mode = base.on_timeout if on_timeout is None else _on_timeout(on_timeout, "new_group")
    members = list(range(base.size)) if ranks is None else sorted({int(r) for r in ranks})
    bad = [r for r in members if not 0 <= r < base.size]
    if bad or not members:
        raise ValueError(f"new_group: ranks must be a non-empty subset of 0..{base.size - 1}, "
                         f"got {ranks}")
    comm = base._mpi.split(members)
    seconds = base.timeout if timeout is None else _seconds(timeout)
    from mpi4py import MPI

    return ProcessGroup(None if comm == MPI.COMM_NULL else comm, members, base.global_rank,
                        seconds, base._peers, base.backend, base.device_index, mode)
