"""Embedding lookups: ``embedding`` (rows of a weight matrix picked by integer indices) and
``embedding_bag`` (the sum, mean or max of bags of rows), with PyTorch's ``padding_idx``,
``max_norm`` and ``scale_grad_by_freq``.

``sparse=True`` is accepted; the weight's gradient is dense (pullback has no sparse tensors).

The bags of a 2-d input are computed with tensor ops alone (a traced call is a graph for any
indices). What depends on the indices' values otherwise (offsets, the padding entries of a 1-d
input, ``max_norm``'s rows, ``scale_grad_by_freq``'s counts) is read with ``numpy()``, which the
compiler's tracer sees: such a call is refused there (or runs eagerly), never frozen.
"""

from __future__ import annotations

import numpy as np

import pullback
from pullback.errors import ArgumentError, IndexOutOfRangeError, ShapeError
from pullback.tensor import Tensor

from .._checks import expect_integer


def _check_range(where: str, input: Tensor, weight: Tensor) -> None:
    num = weight.shape[0]
    if input.numel():
        low, high = int(input.array.min()), int(input.array.max())
        if low < 0 or high >= num:
            raise IndexOutOfRangeError(
                f"{where}: index {low if low < 0 else high} is out of range for "
                f"{num} embeddings (weight of shape {tuple(weight.shape)})"
            )


def _renorm_(weight: Tensor, flat: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_``: the rows ``flat`` refers to whose ``norm_type``-norm
    exceeds ``max_norm`` are scaled, in place and outside autograd, to ``max_norm`` (over the
    norm plus 1e-7)."""
    rows = np.unique(flat.numpy())
    if rows.size == 0:
        return
    index = pullback.tensor(rows, device=weight.device)
    with pullback.no_grad():
        picked = pullback.index_select(weight, 0, index)
        norms = pullback.norm(picked, ord=norm_type, axis=1, keepdims=True)
        scale = pullback.where(norms > max_norm, max_norm / (norms + 1e-7), norms * 0 + 1)
        weight[index] = picked * scale


def _scaled_by_frequency(rows: Tensor, flat: Tensor, num: int) -> Tensor:
    """``rows`` unchanged, with the gradient of the row of index ``i`` divided by how often
    ``i`` occurs in ``flat`` (``scale_grad_by_freq``). The value is exactly ``rows``:
    ``rows.detach() + (z - z.detach())`` adds an exact zero whose gradient is ``z``'s."""
    indices = flat.numpy()
    counts = np.bincount(indices.reshape(-1), minlength=num)
    per_row = 1.0 / counts[indices].astype(np.float64)
    factor = pullback.tensor(per_row.reshape(-1, 1), dtype=rows.dtype, device=rows.device)
    scaled = rows * factor
    return rows.detach() + (scaled - scaled.detach())


def _lookup(flat: Tensor, weight: Tensor, padding_idx: int | None,
            max_norm: float | None, norm_type: float, scale_grad_by_freq: bool) -> Tensor:
    """The rows of ``weight`` at the 1-D indices ``flat``, with the options of both lookups."""
    if max_norm is not None:
        _renorm_(weight, flat, float(max_norm), float(norm_type))
    rows = pullback.index_select(weight, 0, flat)
    if scale_grad_by_freq:
        rows = _scaled_by_frequency(rows, flat, weight.shape[0])
    if padding_idx is not None:
        # The padding row is looked up as usual but receives no gradient (PyTorch's rule).
        is_pad = (flat == padding_idx).reshape(-1, 1)
        rows = pullback.where(is_pad, pullback.index_select(weight.detach(), 0, flat), rows)
    return rows


def padding_index(where: str, padding_idx: int | None, num: int) -> int | None:
    """``padding_idx`` in [0, num) (negative ones count from the end), checked."""
    if padding_idx is None:
        return None
    if not -num <= padding_idx < num:
        raise ArgumentError(f"{where}: padding_idx {padding_idx} is out of range for {num} "
                            "embeddings")
    return padding_idx % num


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """``weight[input]`` with shape ``input.shape + (embedding_dim,)``.

    Args:
        padding_idx: rows at this index are looked up as usual but receive no gradient.
        max_norm: rows looked up whose ``norm_type``-norm exceeds it are first renormalized
            to it, in ``weight`` itself (as PyTorch does).
        scale_grad_by_freq: divide each row's gradient by its index's count in ``input``.
        sparse: accepted for PyTorch's signature; the gradient is dense.
    """
    where = "embedding"
    expect_integer(where, input)
    if weight.ndim != 2:
        raise ShapeError(f"{where}: weight must be 2-D, got shape {tuple(weight.shape)}")
    _check_range(where, input, weight)
    padding_idx = padding_index(where, padding_idx, weight.shape[0])
    rows = _lookup(input.reshape(-1), weight, padding_idx, max_norm, norm_type,
                   scale_grad_by_freq)
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))


def _bags(where: str, input: Tensor, offsets: Tensor | None, include_last_offset: bool,
          per_sample_weights: Tensor | None) -> tuple[Tensor, np.ndarray, int, Tensor | None]:
    """``(flat indices, bag of each index, number of bags, flat per-sample weights)`` of a 1-d
    input cut at ``offsets``."""
    if input.ndim != 1:
        raise ShapeError(f"{where}: input must be 1-d (with offsets) or 2-d, got shape "
                         f"{tuple(input.shape)}")
    if offsets is None or offsets.ndim != 1:
        raise ArgumentError(f"{where}: a 1-d input needs 1-d offsets, got "
                            f"{None if offsets is None else tuple(offsets.shape)}")
    expect_integer(where, offsets, "offsets")
    starts = offsets.numpy().astype(np.int64)
    total = input.shape[0]
    if include_last_offset:
        starts, end = starts[:-1], (int(starts[-1]) if starts.size else 0)
    else:
        end = total
    if starts.size and (starts[0] != 0 or np.any(np.diff(starts) < 0) or starts[-1] > end
                        or end > total):
        raise ArgumentError(f"{where}: offsets must start at 0 and not decrease, within the "
                            f"input's {total} indices, got {starts.tolist()}")
    counts = np.diff(np.append(starts, end))
    bag = np.repeat(np.arange(starts.size), counts)
    if end < total:  # indices after the last offset belong to no bag
        input = input[:end]
        per_sample_weights = None if per_sample_weights is None else per_sample_weights[:end]
    return input, bag, starts.size, per_sample_weights


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The ``"sum"``, ``"mean"`` or ``"max"`` of bags of embedding rows: (B, embedding_dim).

    Bags are the rows of a 2-d ``input``, or the runs of a 1-d ``input`` that start at
    ``offsets`` (with ``include_last_offset``, the last offset ends the last bag). Indices
    equal to ``padding_idx`` are left out of their bag (of its count too); an empty bag gives
    zeros. ``per_sample_weights`` (``"sum"`` only) scales each row first.
    """
    where = "embedding_bag"
    expect_integer(where, input)
    if weight.ndim != 2:
        raise ShapeError(f"{where}: weight must be 2-D, got shape {tuple(weight.shape)}")
    if mode not in ("sum", "mean", "max"):
        raise ArgumentError(f"{where}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ArgumentError(f"{where}: max mode does not support scaling the gradient by the "
                            "frequency")
    if per_sample_weights is not None and mode != "sum":
        raise ArgumentError(f"{where}: per_sample_weights is only supported for mode='sum', got "
                            f"mode={mode!r}")
    _check_range(where, input, weight)
    padding_idx = padding_index(where, padding_idx, weight.shape[0])
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ShapeError(f"{where}: per_sample_weights of shape "
                         f"{tuple(per_sample_weights.shape)} must have the input's shape "
                         f"{tuple(input.shape)}")
    if input.ndim == 2:
        if offsets is not None:
            raise ArgumentError(f"{where}: a 2-d input is a batch of fixed-length bags; offsets "
                                "must be None")
        rows = _lookup(input.reshape(-1), weight, None, max_norm, norm_type, scale_grad_by_freq)
        return _fixed_length_bags(rows.reshape(tuple(input.shape) + (weight.shape[1],)), input,
                                  mode, per_sample_weights, padding_idx)
    flat, bag, n_bags, sample_weights = _bags(where, input, offsets, include_last_offset,
                                              per_sample_weights)
    keep = np.ones(bag.shape, dtype=bool) if padding_idx is None else (
        flat.numpy() != padding_idx)
    if not keep.all():  # padding entries take no part: drop them before the lookup
        chosen = pullback.tensor(np.flatnonzero(keep), device=flat.device)
        flat, bag = pullback.index_select(flat, 0, chosen), bag[keep]
        if sample_weights is not None:
            sample_weights = pullback.index_select(sample_weights, 0, chosen)
    rows = _lookup(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    dim = weight.shape[1]
    if mode == "max":
        return _bag_max(rows, bag, n_bags, dim)
    if sample_weights is not None:
        rows = rows * sample_weights.reshape(-1, 1)
    index = pullback.tensor(np.broadcast_to(bag[:, None], (bag.size, dim)).copy(),
                            device=rows.device)
    zeros = pullback.zeros(n_bags, dim, dtype=weight.dtype, device=weight.device)
    total = zeros.scatter_add(0, index, rows)
    if mode == "sum":
        return total
    counts = np.maximum(np.bincount(bag, minlength=n_bags), 1).astype(np.float64)
    return total / pullback.tensor(counts.reshape(-1, 1), dtype=weight.dtype, device=weight.device)


def _fixed_length_bags(rows: Tensor, input: Tensor, mode: str, sample_weights: Tensor | None,
                       padding_idx: int | None) -> Tensor:
    """The bags of a 2-d input (its rows; ``rows`` is their lookup, (B, L, dim)) with tensor
    ops only: a mask of the entries that are not padding and a reduction over the bag axis. No
    index array is computed from the indices' values, so a traced call is a graph that holds
    for any indices (pullback.compiler, ONNX export)."""
    n, length, dim = rows.shape
    if length == 0:
        return pullback.zeros(n, dim, dtype=rows.dtype, device=rows.device)
    keep = None if padding_idx is None else (input != padding_idx).reshape(n, length, 1)
    if mode == "max":
        if keep is None:
            return pullback.amax(rows, axis=1)
        best = pullback.amax(pullback.where(keep, rows, float("-inf")), axis=1)
        return pullback.where(keep.sum(axis=1) > 0, best, 0.0)  # an empty bag is zeros
    if sample_weights is not None:
        rows = rows * sample_weights.reshape(n, length, 1)
    if keep is not None:
        rows = pullback.where(keep, rows, 0.0)
    total = rows.sum(axis=1)
    if mode == "sum":
        return total
    count = length if keep is None else pullback.clamp(keep.sum(axis=1), min=1)
    return total / count


def _bag_max(rows: Tensor, bag: np.ndarray, n_bags: int, dim: int) -> Tensor:
    """Per-bag elementwise max of ``rows``: the bags laid out as (B, longest bag, dim) with
    ``-inf`` filling the short ones; an empty bag is zeros."""
    sizes = np.bincount(bag, minlength=n_bags)
    longest = int(sizes.max()) if sizes.size else 0
    if longest == 0:
        return pullback.zeros(n_bags, dim, dtype=rows.dtype, device=rows.device)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slot = np.arange(bag.size) - starts[bag]  # position of each row inside its bag
    where_from = np.full((n_bags, longest), rows.shape[0], dtype=np.int64)  # the -inf row
    where_from[bag, slot] = np.arange(bag.size)
    filler = pullback.full((1, dim), float("-inf"), dtype=rows.dtype, device=rows.device)
    padded = pullback.cat([rows, filler], axis=0)
    laid_out = pullback.index_select(padded, 0, pullback.tensor(where_from.reshape(-1),
                                                                device=rows.device))
    best = pullback.amax(laid_out.reshape(n_bags, longest, dim), axis=1)
    if not (sizes == 0).any():
        return best
    empty = pullback.tensor((sizes == 0).reshape(-1, 1), device=rows.device)
    return pullback.where(empty, pullback.zeros_like(best), best)
