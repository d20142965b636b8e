"""Naming the ranks that stopped when a collective outlives its timeout.

MPI collectives block forever when a peer dies and the launcher does not clean up (mpiexec
-disable-auto-cleanup, some schedulers, hosts that lose the network), so every wait has the
process group's timeout (:func:`pullback.distributed._backend.poll`). When it expires, the
ranks on this host are checked (their process ids were exchanged when the group was made)
and the error names the dead ones; ranks on other hosts cannot be checked from here, and the
error says so too.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

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
