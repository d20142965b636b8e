"""DistributedDataParallel: one model replica per process, gradients averaged in buckets.

At construction the replicas are checked to hold the same parameters (names, shapes, dtypes),
and rank 0's parameters and buffers are broadcast to the others. During backward each
parameter's post-accumulate hook copies its finished gradient into its bucket (parameters are
bucketed in reverse order of registration, the order in which backward finishes them, up to
``bucket_cap_mb`` each); a full bucket starts its all-reduce at once, non-blocking, while
backward goes on. Buckets start in index order on every rank, so the collectives match. When
backward has finished (a callback queued on the engine) the remaining reductions are waited
for and the averaged gradients written into ``.grad``.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any, Iterator

import pullback
from pullback import Tensor, nn
from pullback.autograd import queue_callback

from ._backend import Request
from ._group import ProcessGroup, resolve
from .errors import DistributedError


class _Bucket:
    """Parameters whose gradients are reduced together, through one flat buffer."""

    def __init__(self, params: list[nn.Parameter]) -> None:
        self.params = params
        self.offsets: dict[int, tuple[int, int]] = {}
        total = 0
        for p in params:
            self.offsets[id(p)] = (total, total + p.numel())
            total += p.numel()
        first = params[0]
        self.buffer = first.device.backend.xp.zeros(total, dtype=first.dtype)
        self.nbytes = total * first.dtype.itemsize


def _buckets(params: list[nn.Parameter], cap_bytes: float) -> list[_Bucket]:
    """Reverse registration order, split by dtype and device and at ``cap_bytes``."""
    buckets: list[_Bucket] = []
    current: list[nn.Parameter] = []
    size = 0
    for p in reversed(params):
        nbytes = p.numel() * p.dtype.itemsize
        if current and (size + nbytes > cap_bytes or p.dtype != current[0].dtype
                        or p.device != current[0].device):
            buckets.append(_Bucket(current))
            current, size = [], 0
        current.append(p)
        size += nbytes
    if current:
        buckets.append(_Bucket(current))
    return buckets


class _Reduction:
    """The state of one synchronized backward: which parameters are done, which buckets run."""

    def __init__(self, buckets: list[_Bucket]) -> None:
        self.pending = [len(b.params) for b in buckets]
        self.ready: set[int] = set()
        self.requests: list[Request | None] = [None] * len(buckets)
        self.next_bucket = 0
        self.callback_queued = False
        self.finished = False


class DistributedDataParallel(nn.Module):
    """Data-parallel training of ``module``, torch's ``DistributedDataParallel``.

    Args:
        module: the model (every rank builds the same one).
        bucket_cap_mb: the size of a gradient bucket, in MiB (PyTorch's default 25).
        find_unused_parameters: parameters that get no gradient in a step (an unused branch)
            count as zero-gradient contributions; otherwise such a step is an error naming them.
        broadcast_buffers: broadcast rank 0's buffers (batch-norm statistics) at each forward.
        process_group: the group to average over (default: the world).

    ``module.parameters()`` are the optimizer's, as in PyTorch; ``state_dict()`` has the
    ``module.`` prefix. ``no_sync()`` skips the reduction (gradient accumulation).

    Attributes:
        comm_seconds: time spent in communication calls so far (starting reductions, and
            waiting at the end of backward for those still running): the part of each step
            that overlapping did not hide.
    """

    def __init__(self, module: nn.Module, bucket_cap_mb: float = 25.0,
                 find_unused_parameters: bool = False, broadcast_buffers: bool = True,
                 process_group: ProcessGroup | None = None) -> None:
        super().__init__()
        if bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got "
                             f"{bucket_cap_mb}")
        self.module = module
        group = resolve(process_group, "DistributedDataParallel")
        group.impl("DistributedDataParallel")
        self._group = group
        self.find_unused_parameters = find_unused_parameters
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise DistributedError("DistributedDataParallel: the module has no parameter that "
                                   "requires grad")
        self._names = {id(p): n for n, p in named}
        _same_parameters(group, module)
        with pullback.no_grad():
            _broadcast_from_rank0(group, [p for _, p in module.named_parameters()]
                                  + [b for _, b in module.named_buffers() if b is not None])
        self._buckets = _buckets([p for _, p in named], bucket_cap_mb * 2**20)
        self._bucket_of = {id(p): i for i, b in enumerate(self._buckets) for p in b.params}
        self._handles = [p.register_post_accumulate_grad_hook(self._on_gradient) for _, p in named]
        self._reduction: _Reduction | None = None
        self.comm_seconds = 0.0

    # -- forward ------------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.broadcast_buffers:
            buffers = [b for _, b in self.module.named_buffers() if b is not None]
            if buffers:
                with pullback.no_grad():
                    _broadcast_from_rank0(self._group, buffers)
        self._reduction = _Reduction(self._buckets) if self.require_backward_grad_sync else None
        return self.module(*args, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes inside do not reduce: gradients accumulate locally, and the first
        synchronized step after reduces the accumulated sum."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    # -- backward -----------------------------------------------------------------------------
    def _on_gradient(self, param: Tensor) -> None:
        r = self._reduction
        if r is None or r.finished:
            return
        if not r.callback_queued:
            queue_callback(self._finish)
            r.callback_queued = True
        i = self._bucket_of[id(param)]
        bucket = self._buckets[i]
        start, stop = bucket.offsets[id(param)]
        bucket.buffer[start:stop] = param.grad.array.reshape(-1)
        if id(param) not in r.ready:
            r.ready.add(id(param))
            r.pending[i] -= 1
        start = time.perf_counter()
        self._launch_ready(r)
        for req in r.requests:  # let MPI progress the reductions already under way
            if req is not None:
                req.test()
        self.comm_seconds += time.perf_counter() - start

    def _launch_ready(self, r: _Reduction) -> None:
        impl = self._group.impl("DistributedDataParallel")
        while r.next_bucket < len(self._buckets) and r.pending[r.next_bucket] == 0:
            bucket = self._buckets[r.next_bucket]
            r.requests[r.next_bucket] = impl.all_reduce(bucket.buffer, "avg")
            r.next_bucket += 1

    def _finish(self) -> None:
        r = self._reduction
        if r is None or r.finished:
            return
        missing = [p for b in self._buckets for p in b.params if id(p) not in r.ready]
        if missing and not self.find_unused_parameters:
            self._reduction = None
            names = ", ".join(self._names[id(p)] for p in missing[:8])
            more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
            raise DistributedError(
                f"DistributedDataParallel: {len(missing)} parameter(s) got no gradient in this "
                f"backward ({names}{more}), so their buckets cannot be reduced; if the model "
                "has parts that a step may not use, pass find_unused_parameters=True")
        for p in missing:  # unused here: a zero contribution to the average
            i = self._bucket_of[id(p)]
            start, stop = self._buckets[i].offsets[id(p)]
            self._buckets[i].buffer[start:stop] = 0
            r.ready.add(id(p))
            r.pending[i] -= 1
        start = time.perf_counter()
        self._launch_ready(r)
        self._group.wait([req for req in r.requests if req is not None],
                         "DistributedDataParallel's gradient all_reduce")
        self.comm_seconds += time.perf_counter() - start
        for bucket in self._buckets:
            for p in bucket.params:
                start, stop = bucket.offsets[id(p)]
                averaged = bucket.buffer[start:stop].reshape(tuple(p.shape))
                if p.grad is None:
                    p.grad = Tensor._wrap(averaged.copy(), p.device)
                else:
                    p.grad.array[...] = averaged
        r.finished = True


def _same_parameters(group: ProcessGroup, module: nn.Module) -> None:
    """Every rank's module has the same parameters (names, shapes, dtypes) as rank 0's."""
    signature = [(n, tuple(p.shape), str(p.dtype)) for n, p in module.named_parameters()]
    every = group.all_gather_object(signature)
    for rank, theirs in enumerate(every):
        if theirs != every[0]:
            diff = next((a, b) for a, b in zip(every[0] + [None], theirs + [None]) if a != b)
            raise DistributedError(
                f"DistributedDataParallel: rank {group.ranks[rank]}'s module differs from rank "
                f"{group.ranks[0]}'s: {diff[1]} against {diff[0]} (build the same model on "
                "every rank)")


def _broadcast_from_rank0(group: ProcessGroup, tensors: list[Tensor]) -> None:
    """Rank 0's values into every rank's tensors, one flat broadcast per dtype."""
    impl = group.impl("DistributedDataParallel")
    by_dtype: dict[Any, list[Tensor]] = {}
    for t in tensors:
        by_dtype.setdefault((t.dtype, t.device), []).append(t)
    requests, unpack = [], []
    for (dtype, device), ts in by_dtype.items():
        xp = device.backend.xp
        flat = xp.concatenate([t.array.reshape(-1) for t in ts]) if ts else xp.zeros(0, dtype)
        requests.append(impl.broadcast(flat, 0))
        unpack.append((flat, ts))
    group.wait(requests, "DistributedDataParallel's broadcast of rank 0's parameters")
    for flat, ts in unpack:
        offset = 0
        for t in ts:
            n = math.prod(t.shape)
            t.array[...] = flat[offset:offset + n].reshape(tuple(t.shape))
            t._version[0] += 1
            offset += n
