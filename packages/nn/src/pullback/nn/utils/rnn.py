"""Variable-length sequences for the recurrent layers, as ``torch.nn.utils.rnn``:
``PackedSequence``, ``pack_padded_sequence``, ``pad_packed_sequence``, ``pack_sequence``,
``pad_sequence`` and their inverses.

A packed sequence stores the steps of a batch of sequences time-major without padding: the
``batch_sizes[t]`` sequences still running at step t, longest first. Packing and unpacking are
one gather each (``index_select`` over precomputed row numbers), so gradients flow through both.
Lengths and batch sizes live on the host (int64 CPU tensors, as in PyTorch).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

import pullback
from pullback.errors import ArgumentError, ShapeError
from pullback.tensor import Tensor


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """A batch of variable-length sequences without padding (PyTorch's ``PackedSequence``).

    Make one with :func:`pack_padded_sequence` or :func:`pack_sequence`; the recurrent layers
    take it as input and return one.

    Attributes:
        data: the steps, (sum of lengths, *), time-major: step 0 of every sequence, then step 1
            of those at least 2 long, ...
        batch_sizes: int64 (T,): how many sequences are running at each step.
        sorted_indices: the batch order by decreasing length (None when it was already so).
        unsorted_indices: its inverse, to restore the caller's order.
    """

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)), PyTorch's other form
            data, batch_sizes = data
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The same sequence with ``data`` converted by ``Tensor.to`` (batch sizes stay)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        indices = [None if i is None else i.to(data.device)
                   for i in (self.sorted_indices, self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, *indices)

    def cpu(self) -> PackedSequence:
        """``to("cpu")``."""
        return self.to("cpu")

    def double(self) -> PackedSequence:
        """``data`` as float64."""
        return self.to(np.float64)

    def float(self) -> PackedSequence:
        """``data`` as float32."""
        return self.to(np.float32)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device."""
        return self.data.device.type == "cuda"


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of ``0..n-1`` (None stays None)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.detach().cpu())
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return pullback.tensor(inverse, dtype="int64", device=permutation.device)


def _host_ints(values: Any, what: str) -> np.ndarray:
    if isinstance(values, Tensor):
        values = values.detach().cpu()
    array = np.asarray(values)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ArgumentError(f"{what}: expected a 1-d sequence of integers, got "
                            f"{array.dtype} of shape {array.shape}")
    return array.astype(np.int64)


def lengths_from_batch_sizes(batch_sizes: Tensor) -> tuple[int, ...]:
    """Each sequence's length, longest first, from a packed sequence's batch sizes."""
    sizes = _host_ints(batch_sizes, "batch_sizes")
    return tuple(int((sizes > b).sum()) for b in range(int(sizes[0]) if sizes.size else 0))


def _packed_rows(sizes: np.ndarray, batch: int) -> np.ndarray:
    """For a time-major (T, batch) layout, the flat row of every packed element, in order."""
    return np.concatenate([t * batch + np.arange(n) for t, n in enumerate(sizes)]
                          or [np.zeros(0, np.int64)]).astype(np.int64)


def pack_time_major(padded: Tensor, batch_sizes: Tensor) -> Tensor:
    """The packed ``data`` of a time-major (T, B, *) tensor whose batch is sorted by length."""
    sizes = _host_ints(batch_sizes, "batch_sizes")
    steps, batch = padded.shape[:2]
    flat = padded.reshape((steps * batch,) + tuple(padded.shape[2:]))
    rows = pullback.tensor(_packed_rows(sizes, batch), device=padded.device)
    return pullback.index_select(flat, 0, rows)


def unpack_time_major(data: Tensor, batch_sizes: Tensor, steps: int | None = None,
                      padding_value: float = 0.0, order: Tensor | None = None) -> Tensor:
    """Packed ``data`` as a time-major (steps, B, *) tensor, ``padding_value`` after each
    sequence's end, the batch taken in ``order`` (default: sorted by length)."""
    sizes = _host_ints(batch_sizes, "batch_sizes")
    batch = int(sizes[0]) if sizes.size else 0
    steps = sizes.size if steps is None else steps
    pad_row = data.shape[0]  # one extra row of padding_value, where no element is
    where = np.full((steps, batch), pad_row, dtype=np.int64)
    where.reshape(-1)[_packed_rows(sizes, batch)] = np.arange(pad_row)
    if order is not None:
        where = where[:, np.asarray(order.detach().cpu())]
    rest = tuple(data.shape[1:])
    padding = pullback.full((1,) + rest, padding_value, dtype=data.dtype, device=data.device)
    rows = pullback.tensor(where.reshape(-1), device=data.device)
    return pullback.index_select(pullback.cat([data, padding], axis=0), 0, rows).reshape(
        (steps, batch) + rest)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) of sequences of the
    given lengths.

    Args:
        input: the padded batch.
        lengths: each sequence's length (a list or a CPU int tensor), all positive.
        batch_first: the batch is the first axis of ``input``.
        enforce_sorted: the lengths must already decrease; otherwise the batch is sorted and
            the order kept in ``sorted_indices``.

    Returns:
        The :class:`PackedSequence`.
    """
    where = "pack_padded_sequence"
    sizes = _host_ints(lengths, where)
    batch_axis = 0 if batch_first else 1
    if input.ndim < 2 or sizes.size != input.shape[batch_axis]:
        raise ShapeError(f"{where}: {sizes.size} lengths for an input of shape "
                         f"{tuple(input.shape)} (batch axis {batch_axis})")
    if sizes.size and sizes.min() <= 0:
        raise ArgumentError(f"{where}: every length must be positive, got {sizes.tolist()}")
    if sizes.size and sizes.max() > input.shape[1 - batch_axis]:
        raise ShapeError(f"{where}: length {int(sizes.max())} exceeds the input's "
                         f"{input.shape[1 - batch_axis]} steps")
    sorted_indices = None
    if enforce_sorted:
        if np.any(np.diff(sizes) > 0):
            raise ArgumentError(f"{where}: lengths {sizes.tolist()} must decrease when "
                                "enforce_sorted=True (pass enforce_sorted=False to sort them)")
    else:
        order = np.argsort(-sizes, kind="stable")
        sizes = sizes[order]
        sorted_indices = pullback.tensor(order, dtype="int64", device=input.device)
        input = pullback.index_select(input, batch_axis, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    input = input[:int(sizes[0])] if sizes.size else input[:0]
    batch_sizes = pullback.tensor(
        np.array([(sizes > t).sum() for t in range(input.shape[0])], dtype=np.int64))
    return PackedSequence(pack_time_major(input, batch_sizes), batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, the batch back in
    the caller's order.

    Args:
        sequence: the packed batch.
        batch_first: return (B, T, *) instead of (T, B, *).
        padding_value: the value after each sequence's end.
        total_length: pad to this many steps (at least the longest sequence).
    """
    steps = int(sequence.batch_sizes.shape[0])
    if total_length is not None:
        if total_length < steps:
            raise ArgumentError(
                "pad_packed_sequence: expected total_length to be at least the length of the "
                f"longest sequence in input, but got total_length={total_length} and max "
                f"sequence length being {steps}")
        steps = total_length
    padded = unpack_time_major(sequence.data, sequence.batch_sizes, steps, padding_value,
                               sequence.unsorted_indices)
    lengths = np.asarray(lengths_from_batch_sizes(sequence.batch_sizes), dtype=np.int64)
    if sequence.unsorted_indices is not None:
        lengths = lengths[np.asarray(sequence.unsorted_indices.detach().cpu())]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, pullback.tensor(lengths, dtype="int64")


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack sequences of shapes (L_i, *) into (max L, B, *) (or (B, max L, *)), padded with
    ``padding_value`` on ``padding_side`` (``"right"`` or ``"left"``)."""
    if padding_side not in ("right", "left"):
        raise ArgumentError(f"pad_sequence: padding_side must be 'right' or 'left', got "
                            f"{padding_side!r}")
    if not sequences:
        raise ArgumentError("pad_sequence: expected a non-empty list of sequences")
    longest = max(int(s.shape[0]) for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - int(s.shape[0])
        # pullback.pad lists (before, after) from the last axis, as PyTorch's F.pad
        widths = [0, 0] * (s.ndim - 1) + ([0, missing] if padding_side == "right"
                                          else [missing, 0])
        padded.append(pullback.pad(s, widths, value=padding_value) if missing else s)
    return pullback.stack(padded, axis=0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any,
                   batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch, each cut to its length."""
    batch = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [batch[b, :int(n)] for b, n in enumerate(_host_ints(lengths, "unpad_sequence"))]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) sequences (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [int(s.shape[0]) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences of a packed batch, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
    "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence",
]
