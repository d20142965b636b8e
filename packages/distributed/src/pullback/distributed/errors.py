"""The errors of pullback.distributed."""

from __future__ import annotations

from pullback.errors import PullbackError


class DistributedError(PullbackError, RuntimeError):
    """A distributed operation cannot be done (no process group, a rank outside a group,
    parameters that differ between ranks, an unfinished gradient reduction...)."""


class DistributedTimeoutError(DistributedError, TimeoutError):
    """A collective did not complete within the process group's timeout; the message names
    the ranks found dead (or that could not be checked)."""
