"""What happens when a collective outlives its process group's timeout.

MPI collectives block forever when a peer dies and the launcher does not clean up (mpiexec
-disable-auto-cleanup, some schedulers, hosts that lose the network), so every collective has
the group's timeout. When it expires, the ranks on this host are checked (their process ids
were exchanged when the group was made) and the error names the dead ones; ranks on other
hosts cannot be checked from here, and the error says so too.

A group made with ``on_timeout="raise"`` (the default) waits on non-blocking collectives with
a timed poll (:func:`pullback.distributed._backend.poll`) and raises that error. One made with
``on_timeout="abort"`` runs its synchronous all-reduces as MPI's blocking call, which cannot be
interrupted, and starts one :class:`Watchdog` thread, as torch.distributed's NCCL watchdog:
past the timeout it prints the error on stderr and ends the whole job.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from .errors import DistributedTimeoutError


@dataclass(frozen=True)
class Peer:
    """Where a rank runs."""

    rank: int
    host: str
    pid: int


def this_peer(rank: int) -> Peer:
    return Peer(rank, socket.gethostname(), os.getpid())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    # A zombie (killed, not yet reaped by the launcher) has stopped as well.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def diagnose(peers: list[Peer], me: Peer) -> str:
    """Which peers have stopped, as far as this host can tell."""
    dead = [p.rank for p in peers if p.host == me.host and p.rank != me.rank and not _alive(p.pid)]
    remote = [p.rank for p in peers if p.host != me.host]
    parts = []
    if dead:
        parts.append(f"rank{'s' if len(dead) > 1 else ''} {', '.join(map(str, dead))} "
                     f"{'have' if len(dead) > 1 else 'has'} died")
    elif not remote:
        parts.append("every rank is still running, so one of them has not reached this "
                     "collective (do all ranks run the same collectives in the same order?)")
    if remote:
        parts.append(f"ranks {', '.join(map(str, remote))} run on other hosts and cannot be "
                     "checked from here")
    return "; ".join(parts)


def timeout_error(what: str, timeout: float, peers: list[Peer], me: Peer) -> DistributedTimeoutError:
    """The error for ``what`` (the collective) not completing within ``timeout`` seconds,
    naming the peers' state."""
    return DistributedTimeoutError(f"{what} did not complete within {timeout:g} s on rank "
                                   f"{me.rank}: {diagnose(peers, me)}")


class Watchdog:
    """One thread per process group in abort mode, watching its blocking collectives.

    The lean all-reduce announces a call one of two ways. Compiled
    (:mod:`pullback.distributed._native`), the C call stores its start in its own state, and
    ``running`` (given here) reads it back as (seconds running, what). In Python, the call
    stores :attr:`since` (``time.monotonic()`` when it started; 0.0 when none runs) and
    :attr:`op`: two attribute stores, no lock, about a tenth of a microsecond. The thread wakes
    every ``min(1 s, timeout / 10)``; a collective found running for longer than the timeout
    (read twice, so that one which ended meanwhile does not count) makes it call
    ``fire(what)``, which ends the job. Python's attribute stores are atomic under the GIL, and
    a stale read only delays the check by one wake-up.
    """

    def __init__(self, timeout: float, fire: Callable[[str], Any], name: str,
                 running: Callable[[], tuple[float, str]] | None = None) -> None:
        self.since = 0.0
        self.op = ""
        self._timeout, self._fire = timeout, fire
        self._running = self._attributes if running is None else running
        self._period = min(1.0, timeout / 10)
        self._stopped = threading.Event()
        # A daemon: a process that returns from main without destroying its group must not
        # wait for this thread at exit.
        self._thread = threading.Thread(target=self._watch, name=name, daemon=True)
        self._thread.start()

    def _attributes(self) -> tuple[float, str]:
        since = self.since
        return (time.monotonic() - since if since else 0.0), f"all_reduce(op={self.op!r})"

    def _watch(self) -> None:
        while not self._stopped.wait(self._period):
            seconds, what = self._running()
            if seconds > self._timeout and self._running()[0] > self._timeout:
                self._fire(what)
                return

    def stop(self) -> None:
        """End the thread (the group is destroyed)."""
        self._stopped.set()


def end_job(message: str, comm: Any, from_main_thread: bool) -> None:
    """Print ``message`` on stderr and end the job with exit code 1.

    MPI_Abort tears down every process of the job through the launcher. Called from the
    watchdog thread while the main thread is inside MPI, it needs MPI_THREAD_MULTIPLE; at a
    lower thread level (``mpi4py.rc.thread_level`` set to something else before MPI started)
    calling MPI there is undefined, so this process ends alone with ``os._exit(1)``: the
    launcher, or the other ranks' own watchdogs, end the rest.
    """
    from mpi4py import MPI

    sys.stderr.write(f"{message}\n")
    sys.stderr.flush()
    if from_main_thread or MPI.Query_thread() == MPI.THREAD_MULTIPLE:
        comm.Abort(1)
    os._exit(1)
