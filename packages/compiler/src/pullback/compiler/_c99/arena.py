"""Static memory planning: every intermediate array gets an offset in one arena per C type.

Each buffer lives from the step that writes it to the last step that reads it (a reshape's
alias extends its source's life). Two buffers may share memory when their lives do not overlap;
a step's output never shares with its own inputs (their lives meet at that step). Offsets come
from the greedy-by-size heuristic that TensorFlow Lite Micro's planner and tinygrad's memory
planner use: the largest buffers are placed first, each at the lowest offset that does not
collide with a placed buffer whose life overlaps its own. The result is compared with the naive
plan, one buffer each, in :class:`Plan`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable

# offsets are multiples of this many bytes (a cache line; SIMD loads never straddle buffers)
ALIGN_BYTES = 64


@dataclass(eq=False)
class Buffer:
    """One array to place: ``count`` elements of ``itemsize`` bytes, alive over the steps
    ``first`` to ``last`` (inclusive)."""

    key: Hashable
    count: int
    itemsize: int
    first: int
    last: int
    offset: int = -1  # in elements, once placed

    @property
    def nbytes(self) -> int:
        return self.count * self.itemsize


@dataclass
class Plan:
    """Where each buffer of one arena went, the arena's size and the naive sum of the buffers."""

    buffers: list[Buffer] = field(default_factory=list)
    nbytes: int = 0
    naive_bytes: int = 0


def _aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN_BYTES) * ALIGN_BYTES


def plan(buffers: list[Buffer]) -> Plan:
    """Place ``buffers`` (all of one item size) greedily by size; offsets set in place."""
    placed: list[Buffer] = []
    for buf in sorted(buffers, key=lambda b: (-b.nbytes, b.first)):
        size = _aligned(buf.nbytes)
        offset = 0
        for other in sorted((o for o in placed if o.first <= buf.last and buf.first <= o.last),
                            key=lambda o: o.offset):
            start = other.offset * other.itemsize
            if offset + size <= start:
                break
            offset = max(offset, start + _aligned(other.nbytes))
        buf.offset = offset // buf.itemsize
        placed.append(buf)
    total = max((b.offset * b.itemsize + _aligned(b.nbytes) for b in placed), default=0)
    return Plan(placed, total, sum(b.nbytes for b in buffers))
