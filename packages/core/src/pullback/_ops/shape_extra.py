"""Shape functions under PyTorch's names, composed of existing ops (their gradients and func
rules come from those): narrow, movedim, unflatten, atleast_1d/2d/3d, broadcast_tensors, rot90,
tensor_split, hsplit, vsplit, diagonal, diag, diag_embed, repeat_interleave, meshgrid,
block_diag, cartesian_prod, and ``Tensor.unfold`` (sliding windows)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ArgumentError, ShapeError
from ._axes import normalize_axes


def _axis(x: Any, dim: int, name: str) -> int:
    return normalize_axes(dim, x.ndim, name)[0]


def narrow(x: Any, dim: int, start: int, length: int) -> Any:
    """The view ``x[..., start:start + length, ...]`` along ``dim``."""
    from .index import getitem

    d = _axis(x, dim, "narrow")
    n = x.shape[d]
    start = start + n if start < 0 else start
    if not (0 <= start <= n and 0 <= length and start + length <= n):
        raise ArgumentError(f"narrow: start {start} and length {length} exceed dimension {dim} "
                            f"of size {n} (shape {tuple(x.shape)})")
    return getitem(x, (slice(None),) * d + (slice(start, start + length),))


def movedim(x: Any, source: Any, destination: Any) -> Any:
    """``x`` with the axes ``source`` moved to ``destination`` (ints or sequences)."""
    from .shape import permute

    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ShapeError(f"movedim: {len(src)} source dims against {len(dst)} destinations")
    src = [normalize_axes(a, x.ndim, "movedim")[0] for a in src]
    dst = [normalize_axes(a, x.ndim, "movedim")[0] for a in dst]
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute(x, tuple(order))


def unflatten(x: Any, dim: int, sizes: Sequence[int]) -> Any:
    """``dim`` split into ``sizes`` (one of them may be -1)."""
    from .shape import reshape

    d = _axis(x, dim, "unflatten")
    return reshape(x, tuple(x.shape[:d]) + tuple(sizes) + tuple(x.shape[d + 1:]))


def _atleast(n: int, name: str, tensors: tuple[Any, ...]) -> Any:
    from .shape import reshape

    def one(t: Any) -> Any:
        if t.ndim >= n:
            return t
        shape = tuple(t.shape)
        if n == 3 and t.ndim == 2:
            return reshape(t, shape + (1,))
        if n == 3 and t.ndim == 1:
            return reshape(t, (1,) + shape + (1,))
        return reshape(t, (1,) * (n - t.ndim) + shape)

    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    out = tuple(one(t) for t in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least 1 dim."""
    return _atleast(1, "atleast_1d", tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dims (leading 1s)."""
    return _atleast(2, "atleast_2d", tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dims (NumPy's placement: (n,) -> (1, n, 1))."""
    return _atleast(3, "atleast_3d", tensors)


def broadcast_tensors(*tensors: Any) -> tuple[Any, ...]:
    """The tensors broadcast to their common shape (views)."""
    from .shape import broadcast_to

    try:
        shape = tuple(np.broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    except ValueError:
        raise ShapeError("broadcast_tensors: shapes " + ", ".join(
            str(tuple(t.shape)) for t in tensors) + " do not broadcast") from None
    return tuple(t if tuple(t.shape) == shape else broadcast_to(t, shape) for t in tensors)


def rot90(x: Any, k: int = 1, dims: Sequence[int] = (0, 1)) -> Any:
    """``x`` rotated by ``k`` quarter turns in the plane ``dims`` (from the first axis toward
    the second)."""
    from .shape import flip, transpose

    if len(dims) != 2:
        raise ShapeError(f"rot90: dims must name two axes, got {tuple(dims)}")
    a, b = (normalize_axes(d, x.ndim, "rot90")[0] for d in dims)
    if a == b:
        raise ShapeError(f"rot90: the two dims must differ, got {tuple(dims)}")
    k %= 4
    if k == 0:
        return x
    if k == 2:
        return flip(x, (a, b))
    if k == 1:
        return transpose(flip(x, (b,)), a, b)
    return flip(transpose(x, a, b), (b,))


def tensor_split(x: Any, indices_or_sections: Any, dim: int = 0) -> tuple[Any, ...]:
    """Views of ``x`` along ``dim``: ``n`` near-equal parts (the first ``size % n`` one
    longer), or the parts between the given indices."""
    from .index import getitem

    d = _axis(x, dim, "tensor_split")
    size = x.shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise ArgumentError(f"tensor_split: sections must be positive, got {n}")
        q, r = divmod(size, n)
        bounds = [i * q + min(i, r) for i in range(n + 1)]
    else:
        bounds = [0] + [min(max(int(i), 0), size) for i in indices_or_sections] + [size]
    return tuple(getitem(x, (slice(None),) * d + (slice(lo, max(lo, hi)),))
                 for lo, hi in zip(bounds[:-1], bounds[1:]))


def _split_evenly(x: Any, sections: Any, dim: int, name: str) -> tuple[Any, ...]:
    if isinstance(sections, int) and x.shape[dim] % sections:
        raise ShapeError(f"{name}: dimension {dim} of size {x.shape[dim]} does not split into "
                         f"{sections} equal parts")
    return tensor_split(x, sections, dim)


def hsplit(x: Any, sections: Any) -> tuple[Any, ...]:
    """Split along dim 1 (dim 0 for 1-D tensors) into equal parts or at indices."""
    return _split_evenly(x, sections, 1 if x.ndim > 1 else 0, "hsplit")


def vsplit(x: Any, sections: Any) -> tuple[Any, ...]:
    """Split along dim 0 (of a tensor with at least 2 dims)."""
    if x.ndim < 2:
        raise ShapeError(f"vsplit: needs at least 2 dims, got shape {tuple(x.shape)}")
    return _split_evenly(x, sections, 0, "vsplit")


def diagonal(x: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """The diagonal of the planes ``(dim1, dim2)``, as the last axis."""
    from .index import getitem

    a, b = _axis(x, dim1, "diagonal"), _axis(x, dim2, "diagonal")
    if a == b:
        raise ShapeError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    moved = movedim(x, (a, b), (-2, -1))
    rows, cols = moved.shape[-2], moved.shape[-1]
    start_r, start_c = (0, offset) if offset >= 0 else (-offset, 0)
    n = max(0, min(rows - start_r, cols - start_c))
    i = np.arange(n)
    return getitem(moved, (Ellipsis, i + start_r, i + start_c))


_diagonal = diagonal  # diag's keyword is called diagonal, as PyTorch's


def diag(x: Any, diagonal: int = 0) -> Any:
    """A 1-D tensor's square matrix with it on the ``diagonal``-th diagonal, or a matrix's
    ``diagonal``-th diagonal."""
    from .elementwise import mul
    from .shape import pad, reshape

    if x.ndim == 2:
        return _diagonal(x, diagonal)
    if x.ndim != 1:
        raise ShapeError(f"diag: expected a 1-D or 2-D tensor, got shape {tuple(x.shape)}")
    from ..creation import eye

    n = x.shape[0]
    square = mul(eye(n, dtype=x.dtype, device=x.device), reshape(x, (1, n)))
    k = abs(diagonal)
    if k == 0:
        return square
    # Shift the square into place: right for offsets above the diagonal, down below it.
    return pad(square, (k, 0, 0, k) if diagonal > 0 else (0, k, k, 0))


def repeat_interleave(x: Any, repeats: Any, dim: int | None = None) -> Any:
    """Each element (or slice along ``dim``) repeated ``repeats`` times in place (``repeats``
    an int or a 1-D tensor of counts); without ``dim`` the flattened tensor."""
    from ..tensor import Tensor
    from .index import index_select
    from .shape import reshape

    if dim is None:
        x, d = reshape(x, (-1,)), 0
    else:
        d = _axis(x, dim, "repeat_interleave")
    # The counts decide the result's size: read on the host (vmap refuses batched counts).
    counts = np.asarray(repeats.detach().numpy() if isinstance(repeats, Tensor) else repeats)
    if counts.ndim > 1 or (counts.ndim == 1 and counts.shape[0] != x.shape[d]) or (
            counts < 0).any():
        raise ShapeError(f"repeat_interleave: repeats must be a non-negative int or one count "
                         f"per element of dimension {d} (size {x.shape[d]}), got {repeats!r}")
    idx = np.repeat(np.arange(x.shape[d]), counts)
    return index_select(x, d, idx)


def diag_embed(x: Any, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Any:
    """Matrices with the last axis of ``x`` on their ``offset``-th diagonal, in the planes
    ``(dim1, dim2)`` of the result."""
    from ..creation import eye
    from .elementwise import mul
    from .shape import pad, unsqueeze

    if x.ndim == 0:
        raise ShapeError("diag_embed: needs at least 1 dim, got a 0-d tensor")
    n = x.shape[-1]
    square = mul(unsqueeze(x, -1), eye(n, dtype=x.dtype, device=x.device))
    k = abs(offset)
    if k:
        square = pad(square, (k, 0, 0, k) if offset > 0 else (0, k, k, 0))
    nd = x.ndim + 1
    a, b = normalize_axes(dim1, nd, "diag_embed")[0], normalize_axes(dim2, nd, "diag_embed")[0]
    if a == b:
        raise ShapeError(f"diag_embed: dim1 and dim2 must differ, got {dim1} and {dim2}")
    return movedim(square, (-2, -1), (a, b))


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Any, ...]:
    """Coordinate grids of 1-D tensors (views): ``"ij"`` (matrix) or ``"xy"`` (Cartesian)
    indexing."""
    from .shape import broadcast_to, reshape

    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    for t in tensors:
        if t.ndim > 1:
            raise ShapeError(f"meshgrid: expects 0-d or 1-D tensors, got shape {tuple(t.shape)}")
    sizes = [t.numel() for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(tensors):
        pos = (1 - i if i < 2 else i) if swap else i
        shape = [1] * len(tensors)
        shape[pos] = sizes[pos]
        out.append(broadcast_to(reshape(t, tuple(shape)), tuple(sizes)))
    return tuple(out)


def block_diag(*tensors: Any) -> Any:
    """The tensors (0-d, 1-D as a row, or 2-D) as blocks along the diagonal of a matrix."""
    from .shape import cat, pad, reshape

    blocks = []
    for t in tensors:
        if t.ndim > 2:
            raise ShapeError(f"block_diag: expects tensors of at most 2 dims, got shape "
                             f"{tuple(t.shape)}")
        blocks.append(reshape(t, (1, 1) if t.ndim == 0 else (1, t.shape[0]) if t.ndim == 1
                              else tuple(t.shape)))
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        rows.append(pad(b, (left, width - left - b.shape[1])))
        left += b.shape[1]
    return cat(rows, axis=0)


def cartesian_prod(*tensors: Any) -> Any:
    """Every combination of the elements of 1-D tensors, one per row (a single tensor comes
    back as it is)."""
    from .shape import reshape, stack

    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([reshape(g, (-1,)) for g in grids], axis=1)


def unfold(x: Any, dimension: int, size: int, step: int) -> Any:
    """``Tensor.unfold``: the windows of ``size`` elements every ``step`` along ``dimension``,
    which becomes the window count, with a new last axis of ``size``."""
    from .index import getitem

    d = normalize_axes(dimension, max(x.ndim, 1), "unfold")[0]
    n = x.shape[d] if x.ndim else 1
    if size < 0 or size > n or step <= 0:
        raise ArgumentError(f"unfold: size {size} and step {step} do not fit dimension "
                            f"{dimension} of size {n}")
    starts = np.arange(0, n - size + 1, step)
    key = starts[:, None] + np.arange(size)[None, :]
    if x.ndim == 0:
        return getitem(x, (None,))
    windows = getitem(movedim(x, d, -1), (Ellipsis, key))
    return movedim(windows, -2, d)


METHODS = ("unfold", "diag_embed", "narrow", "movedim", "unflatten", "rot90", "tensor_split",
           "hsplit", "vsplit",
           "diagonal", "diag", "repeat_interleave")
