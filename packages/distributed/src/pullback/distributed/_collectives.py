"""Collectives on tensors, with torch.distributed's signatures: each works in place on the
tensors' backend arrays (outside the autograd graph, bumping their version counters, as
PyTorch's do) and, with ``async_op=True``, returns a :class:`Work` to ``wait()`` on.

Ranks in arguments (``src``, ``dst``) are global ranks, as in torch.distributed.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from pullback import Tensor
from pullback.errors import ShapeError

from ._backend import REDUCTIONS, Request
from ._group import ProcessGroup, resolve
from .errors import DistributedError


class ReduceOp:
    """The reductions of :func:`all_reduce` and :func:`reduce_scatter`."""

    SUM = "sum"
    AVG = "avg"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"


class Work:
    """A collective started with ``async_op=True``."""

    def __init__(self, group: ProcessGroup, requests: list[Request], what: str,
                 after: Callable[[], None] | None = None) -> None:
        self._group, self._requests, self._what, self._after = group, requests, what, after
        self._done = False

    def is_completed(self) -> bool:
        """Whether it has finished (progressing it; never blocks)."""
        if not self._done and all(r.test() for r in self._requests):
            self.wait()
        return self._done

    def wait(self) -> None:
        """Block until it has finished (with the group's timeout)."""
        if self._done:
            return
        self._group.wait(self._requests, self._what)
        if self._after is not None:
            self._after()
        self._done = True


def _check_tensor(t: Any, group: ProcessGroup, what: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected a Tensor, got {type(t).__name__}")
    wanted = "cuda" if group.backend == "nccl" else "cpu"
    if t.device.type != wanted:
        raise DistributedError(f"{what}: backend '{group.backend}' works on {wanted} tensors, "
                               f"got one on {t.device}")


def _buffer(t: Tensor) -> tuple[Any, Callable[[], None] | None]:
    """A C-contiguous array to communicate, and how to copy it back when it is a copy."""
    arr = t.array
    if arr.flags.c_contiguous:
        return arr, None
    contiguous = arr.copy()

    def back() -> None:
        arr[...] = contiguous

    return contiguous, back


def _finish(group: ProcessGroup, requests: list[Request], what: str, async_op: bool,
            after: Callable[[], None] | None, touched: Sequence[Tensor]) -> Work | None:
    def done() -> None:
        if after is not None:
            after()
        for t in touched:
            t._version[0] += 1  # written in place, outside the graph

    work = Work(group, requests, what, done)
    if async_op:
        return work
    work.wait()
    return None


def _group_rank(group: ProcessGroup, rank: int, what: str) -> int:
    if rank not in group.ranks:
        raise DistributedError(f"{what}: rank {rank} is not in the group (ranks {group.ranks})")
    return group.ranks.index(rank)


def general_all_reduce(tensor: Tensor, op: str, group: ProcessGroup | None,
                       async_op: bool) -> Work | None:
    """:func:`pullback.distributed.all_reduce` (:mod:`pullback.distributed._fastpath`) where its
    lean path does not cover the call: any tensor, op, device or ``async_op``, checked."""
    what = f"all_reduce(op={op!r})"
    g = resolve(group, what)
    if op not in REDUCTIONS:
        raise ValueError(f"{what}: op must be one of {REDUCTIONS}")
    _check_tensor(tensor, g, what)
    arr, back = _buffer(tensor)
    return _finish(g, [g.impl(what).all_reduce(arr, op)], what, async_op, back, [tensor])


def broadcast(tensor: Tensor, src: int, group: ProcessGroup | None = None,
              async_op: bool = False) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into ``tensor`` on every rank."""
    what = f"broadcast(src={src})"
    g = resolve(group, what)
    _check_tensor(tensor, g, what)
    arr, back = _buffer(tensor)
    req = g.impl(what).broadcast(arr, _group_rank(g, src, what))
    return _finish(g, [req], what, async_op, back, [tensor])


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Fill ``tensor_list[r]`` with rank r's ``tensor`` (one entry per member)."""
    what = "all_gather"
    g = resolve(group, what)
    _check_tensor(tensor, g, what)
    if len(tensor_list) != g.size:
        raise ShapeError(f"{what}: tensor_list has {len(tensor_list)} entries for a group of "
                         f"{g.size}")
    for t in tensor_list:
        _check_tensor(t, g, what)
        if tuple(t.shape) != tuple(tensor.shape) or t.dtype != tensor.dtype:
            raise ShapeError(f"{what}: every output must have the input's shape "
                             f"{tuple(tensor.shape)} and dtype {tensor.dtype}, got "
                             f"{tuple(t.shape)} {t.dtype}")
    req, gathered = g.impl(what).all_gather(np.ascontiguousarray(tensor.array)
                                            if g.backend == "mpi" else tensor.array)

    def scatter_back() -> None:
        for r, t in enumerate(tensor_list):
            t.array[...] = gathered[r]

    return _finish(g, [req], what, async_op, scatter_back, tensor_list)


def reduce_scatter(output: Tensor, input_list: list[Tensor], op: str = ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Reduce ``input_list[r]`` over the ranks and leave the result of entry r on rank r."""
    what = f"reduce_scatter(op={op!r})"
    g = resolve(group, what)
    if op not in REDUCTIONS:
        raise ValueError(f"{what}: op must be one of {REDUCTIONS}")
    _check_tensor(output, g, what)
    if len(input_list) != g.size or any(tuple(t.shape) != tuple(output.shape) for t in input_list):
        raise ShapeError(f"{what}: give {g.size} inputs of the output's shape "
                         f"{tuple(output.shape)}")
    xp = output.device.backend.xp
    stacked = xp.stack([t.array for t in input_list])
    arr, back = _buffer(output)
    return _finish(g, [g.impl(what).reduce_scatter(arr, stacked, op)], what, async_op, back,
                   [output])


def send(tensor: Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> None:
    """Send ``tensor`` to rank ``dst`` (blocking until it has been sent)."""
    what = f"send(dst={dst})"
    g = resolve(group, what)
    _check_tensor(tensor, g, what)
    req = g.impl(what).send(np.ascontiguousarray(tensor.array) if g.backend == "mpi"
                            else tensor.array, _group_rank(g, dst, what), tag)
    g.wait([req], what)


def recv(tensor: Tensor, src: int, group: ProcessGroup | None = None, tag: int = 0) -> int:
    """Receive into ``tensor`` from rank ``src``; returns ``src``."""
    what = f"recv(src={src})"
    g = resolve(group, what)
    _check_tensor(tensor, g, what)
    arr, back = _buffer(tensor)
    _finish(g, [g.impl(what).recv(arr, _group_rank(g, src, what), tag)], what, False, back,
            [tensor])
    return src


def barrier(group: ProcessGroup | None = None) -> None:
    """Wait until every member has reached the barrier."""
    g = resolve(group, "barrier")
    g.wait([g.impl("barrier").barrier()], "barrier")
