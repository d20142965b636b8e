"""The batched replay behind :class:`GradSampleModule`: per-sample gradients of one recorded
forward pass by ``vmap(grad(...))`` through ``functional_call``, a chunk of samples at a time.

Each sample's gradient is that of ``<f(params, x_i), c_i>``, where ``c_i`` is the loss's
gradient with respect to sample ``i``'s outputs (captured by the forward pass's output leaves).
The replay must see the random numbers the forward pass saw: the generator is put back to its
state before the forward, and ``vmap(..., randomness="different")`` draws ``(samples, *shape)``
at once, the numbers the batched forward drew for ``(batch, ...)``. A chunk of samples
``[start, stop)`` takes those rows of each full-batch draw (:class:`_RowsOfBatchDraws`).

Chunks bound memory by ``chunk x parameters`` instead of ``batch x parameters``; they also
keep each array below glibc's mmap threshold (32 MiB), so the allocator reuses memory from step
to step instead of taking fresh pages from the kernel, which it must zero first: on the 535k
parameter Fashion-MNIST MLP at batch 256, 801 ms for one chunk against 368 ms in chunks of 16
(one thread, loaded machine; benchmarks/dp_step.py measures the whole step).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pullback
from pullback.dispatch import DispatchMode, draw_random
from pullback.func import functional_call, grad_and_value, vmap
from pullback.func._pytree import tree_flatten, tree_map, tree_unflatten
from pullback.tensor import Tensor

from ._errors import PrivacyUsageError

CHUNK_BYTES = 32 * 2 ** 20
"""The per-sample gradients of one chunk take at most about this much (one sample at least)."""

# Replayed and forward outputs may differ by rounding (one GEMM over the batch against one per
# chunk); a model that mixes samples differs by the size of the outputs.
_REPLAY_RTOL = 1e-3


class _RowsOfBatchDraws(DispatchMode):
    """Below vmap while samples ``[start, stop)`` of a batch replay: each draw of
    ``(stop - start, *shape)`` is those rows of a ``(batch, *shape)`` draw."""

    def __init__(self, batch: int, start: int, stop: int) -> None:
        self.batch, self.start, self.stop = batch, start, stop

    def random(self, draw: Callable[[tuple[int, ...]], Tensor], shape: tuple[int, ...]) -> Tensor:
        return draw_random(draw, (self.batch,) + tuple(shape[1:]))[self.start:self.stop]


def chunk_size(params: dict[str, Tensor], batch: int) -> int:
    """Samples per chunk: as many as fit :data:`CHUNK_BYTES` of per-sample gradients."""
    per_sample = sum(p.numel() * p.dtype.itemsize for p in params.values())
    return max(1, min(batch, CHUNK_BYTES // max(per_sample, 1)))


def per_sample_chunks(module: Any, params: dict[str, Tensor], args: tuple[Any, ...],
                      kwargs: dict[str, Any], outputs: list[Any], cotangents: list[Any],
                      rng_state: Any, backend: Any, chunk: int | None = None
                      ) -> Iterator[dict[str, Tensor]]:
    """The per-sample gradients of ``module``'s forward pass on ``args``, chunk by chunk.

    Args:
        module: the model; ``params`` are the parameters to differentiate, by name.
        args, kwargs: the forward pass's arguments (tensors batched along dim 0).
        outputs, cotangents: the forward pass's output leaves and the gradient reaching each
            (``None`` for outputs the loss does not use).
        rng_state: the generator's state before the forward pass, on ``backend``.
        chunk: samples per chunk (default :func:`chunk_size`).

    Yields:
        ``{name: (samples, *shape)}`` for consecutive chunks of samples.

    Raises:
        PrivacyUsageError: a chunk's replayed outputs differ from the forward pass's.
    """
    size = next(a.shape[0] for a in tree_flatten(args)[0] if isinstance(a, Tensor) and a.ndim)
    if size == 0:  # an empty Poisson batch: no sample, no gradient
        yield {name: pullback.zeros((0,) + tuple(p.shape), dtype=p.dtype, device=p.device)
               for name, p in params.items()}
        return
    for k, c in enumerate(cotangents):
        if c is not None and (c.ndim == 0 or c.shape[0] != size):
            raise PrivacyUsageError(
                f"the loss uses output {k} of the model, of shape {tuple(c.shape)}, whose dim 0 "
                f"is not the batch ({size} samples): per-sample gradients take dim 0 of every "
                "output as the sample dim (a recurrent layer's final state is (layers, batch, "
                "hidden): have the model return its output sequence, or the state with the "
                "batch moved first)")
    arg_leaves, arg_spec = tree_flatten(args)
    arg_dims = tree_unflatten([0 if isinstance(a, Tensor) else None for a in arg_leaves],
                              arg_spec)
    ct_dims = [None if c is None else 0 for c in cotangents]

    def sample_value(p: dict[str, Tensor], sample_args: Any, cts: list[Any]) -> Tensor:
        """<f(p, x_i), c_i> for one sample, run as a batch of one."""
        batch_of_one = [a.unsqueeze(0) if isinstance(a, Tensor) else a
                        for a in tree_flatten(sample_args)[0]]
        out = functional_call(module, p, tree_unflatten(batch_of_one, arg_spec), kwargs)
        terms = [(leaf[0] * ct).sum() for leaf, ct in zip(tree_flatten(out)[0], cts)
                 if ct is not None]
        return sum(terms[1:], terms[0])

    replay = vmap(grad_and_value(sample_value), in_dims=(None, arg_dims, ct_dims),
                  randomness="different")
    step = chunk or chunk_size(params, size)
    for start in range(0, size, step):
        stop = min(size, start + step)
        chunk_cts = [None if c is None else c[start:stop] for c in cotangents]
        resume = backend.get_rng_state()
        backend.set_rng_state(rng_state)  # the forward pass's random numbers again
        try:
            if stop - start == size:
                grads, values = replay(params, args, chunk_cts)
            else:
                with _RowsOfBatchDraws(size, start, stop):
                    grads, values = replay(params, tree_map(_rows(start, stop), args), chunk_cts)
        finally:
            backend.set_rng_state(resume)
        _check_replay(values, outputs, chunk_cts, start, stop)
        yield grads


def _rows(start: int, stop: int) -> Callable[[Any], Any]:
    return lambda x: x[start:stop] if isinstance(x, Tensor) else x


def _check_replay(values: Tensor, outputs: list[Any], cotangents: list[Any], start: int,
                  stop: int) -> None:
    """Each sample's replayed ``<f(x_i), c_i>`` must be the forward pass's (samples
    ``[start, stop)``; ``cotangents`` are theirs already)."""
    expected, scale = 0.0, 0.0
    for out, ct in zip(outputs, cotangents):
        if ct is None:
            continue
        o, c = out.array[start:stop], ct.array
        expected = expected + (o * c).reshape(o.shape[0], -1).sum(axis=1)
        scale = scale + abs(o * c).reshape(o.shape[0], -1).sum(axis=1)
    error = abs(values.array - expected)
    bad = (error > _REPLAY_RTOL * (scale + scale.max() * 1e-3)).nonzero()[0]
    if bad.size:
        i = int(bad[0])
        raise PrivacyUsageError(
            f"the per-sample replay of the forward pass does not reproduce it ({bad.size} of "
            f"{error.shape[0]} samples differ, one by {float(error[i]):.3g}): the model "
            "mixes samples of a batch (BatchNorm in training mode, statistics over dim 0) or "
            "draws random numbers that are not one draw of (batch, ...) per call, so its "
            "per-sample gradients are not defined")
