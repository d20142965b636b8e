"""``vmap``: the batching transform (``torch.func.vmap``, ``jax.vmap``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import pullback
from pullback.tensor import Tensor

from ._batch_rules._util import move_dim
from ._batched import BatchedTensor, VmapMode, make_batched
from ._errors import VmapError
from ._levels import new_level, run_at_level
from ._pytree import broadcast_prefix, tree_flatten, tree_unflatten

_RANDOMNESS = ("error", "same", "different")


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0,
         randomness: str = "error", *, chunk_size: int | None = None) -> Callable[..., Any]:
    """Vectorize ``func`` over a batch dimension of its inputs.

    ``vmap(f)(xs)`` is ``stack([f(x) for x in xs])``, computed without a loop: every op runs
    once on the whole batch through its batching rule (the ``"batch"`` rule of the op registry).

    Args:
        func: a function of tensors (pytrees of them: tuples, lists, dicts) returning tensors.
        in_dims: the batch dim of each argument: an int (negative counts from the end), None
            (not batched), or a pytree prefix of the arguments giving one per subtree.
        out_dims: where the batch dim goes in each output (an int, or a pytree prefix).
        randomness: what random draws inside ``func`` do: ``"error"`` refuses them, ``"same"``
            shares one draw among the samples, ``"different"`` draws for each sample.
        chunk_size: run at most this many samples at a time (bounds the memory of large
            batches; the results are concatenated).

    Returns:
        The batched function.

    Example:
        >>> import pullback as pb
        >>> from pullback.func import vmap
        >>> x, y = pb.randn(8, 3), pb.randn(8, 3)
        >>> tuple(vmap(pb.dot)(x, y).shape)
        (8,)
    """
    if randomness not in _RANDOMNESS:
        raise ValueError(f"vmap: randomness must be one of {_RANDOMNESS}, got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ValueError(f"vmap: chunk_size must be a positive int or None, got {chunk_size!r}")

    @functools.wraps(func)
    def batched(*args: Any) -> Any:
        flat, spec = tree_flatten(args)
        dims = broadcast_prefix(in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args),
                                args, "vmap: in_dims")
        size, dims = _batch_size(flat, dims)
        if chunk_size is None or size <= chunk_size:
            return _run(func, flat, spec, dims, size, out_dims, randomness)
        pieces = []
        for start in range(0, size, chunk_size):
            stop = min(start + chunk_size, size)
            part = [x if d is None else _slice(x, d, start, stop) for x, d in zip(flat, dims)]
            pieces.append(_run(func, part, spec, dims, stop - start, out_dims, randomness))
        return _concat_chunks(pieces, out_dims)

    return batched


def _batch_size(flat: list[Any], dims: list[Any]) -> tuple[int, list[Any]]:
    """The batch size all batched arguments agree on, and their dims made non-negative."""
    size = None
    normalized = []
    for i, (x, d) in enumerate(zip(flat, dims)):
        if d is None:
            normalized.append(None)
            continue
        if not isinstance(d, int):
            raise ValueError(f"vmap: in_dims entries must be ints or None, got {d!r}")
        if not isinstance(x, Tensor):
            raise VmapError(f"vmap: in_dim {d} given for argument {i}, which is "
                            f"{type(x).__name__}, not a Tensor (use None for it)")
        if not -x.ndim <= d < x.ndim:
            raise VmapError(f"vmap: in_dim {d} is out of range for argument {i} of shape "
                            f"{tuple(x.shape)}")
        d %= x.ndim
        if size is None:
            size = x.shape[d]
        elif x.shape[d] != size:
            raise VmapError(f"vmap: batched arguments disagree on the batch size: argument {i} "
                            f"of shape {tuple(x.shape)} has {x.shape[d]} along in_dim {d}, "
                            f"others have {size}")
        normalized.append(d)
    if size is None:
        raise VmapError("vmap: no argument is batched (every in_dim is None or the arguments "
                        "hold no tensor)")
    return size, normalized


def _run(func: Callable[..., Any], flat: list[Any], spec: Any, dims: list[Any], size: int,
         out_dims: Any, randomness: str) -> Any:
    level = new_level("vmap")
    wrapped = [x if d is None else make_batched(x, d, level) for x, d in zip(flat, dims)]
    out = run_at_level(level, VmapMode(level, size, randomness), func,
                       *tree_unflatten(wrapped, spec))
    leaves, out_spec = tree_flatten(out)
    targets = broadcast_prefix(out_dims, out, "vmap: out_dims")
    return tree_unflatten([_unwrap(o, d, level, size, i) for i, (o, d)
                           in enumerate(zip(leaves, targets))], out_spec)


def _unwrap(out: Any, out_dim: Any, level: Any, size: int, index: int) -> Any:
    """One output of the batched function: its batch dim moved to ``out_dim``."""
    batched = isinstance(out, BatchedTensor) and out._level is level
    if out_dim is None:
        if batched:
            raise VmapError(f"vmap: output {index} depends on the batch but its out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise VmapError(f"vmap: output {index} is {type(out).__name__}; a vmapped function must "
                        "return tensors (or give out_dims=None for it)")
    ndim = out.ndim + 1
    if not -ndim <= out_dim < ndim:
        raise VmapError(f"vmap: out_dim {out_dim} is out of range for output {index} of sample "
                        f"shape {tuple(out.shape)}")
    out_dim %= ndim
    if batched:
        return move_dim(out._value, out._bdim, out_dim)
    # The same for every sample: broadcast along a new batch dim (a view, as torch.func does).
    expanded = pullback.broadcast_to(pullback.unsqueeze(out, 0), (size,) + tuple(out.shape))
    return move_dim(expanded, 0, out_dim)


def _slice(x: Tensor, dim: int, start: int, stop: int) -> Tensor:
    return x[(slice(None),) * dim + (slice(start, stop),)]


def _concat_chunks(pieces: list[Any], out_dims: Any) -> Any:
    leaves = [tree_flatten(p)[0] for p in pieces]
    spec = tree_flatten(pieces[0])[1]
    targets = broadcast_prefix(out_dims, pieces[0], "vmap: out_dims")
    joined = []
    for k, d in enumerate(targets):
        if d is None:
            joined.append(leaves[0][k])
        else:
            joined.append(pullback.cat([chunk[k] for chunk in leaves], d % leaves[0][k].ndim))
    return tree_unflatten(joined, spec)
