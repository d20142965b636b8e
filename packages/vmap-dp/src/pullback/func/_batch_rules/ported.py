"""Batching rules of the ops core added for ported PyTorch code (scans, sorts, scatters): ops
along one ``axis`` of a single input (cumprod, logcumsumexp, the running-extremum index,
argsort, the mode index) run on the whole batch with the axis shifted past the batch dim. Ops
whose output size depends on the values (unique, nonzero) run once per sample, as PyTorch's
vmap cannot batch them either (scatter_reduce's rule is with the scatter family's, in
index.py). The matrix functions of
pullback.linalg work on the last two axes of any stack: the batch dim goes first."""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op

from ._util import align_front, front, shift_axis
from .fallback import loop_fallback


def along_axis(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
               axis: int, **attrs: Any) -> tuple[Any, int]:
    """The op along each sample's ``axis`` (the public functions never hand it 0-d inputs)."""
    x = front(args[0], bdims[0])
    return apply(op, x, axis=shift_axis(axis, x.ndim - 1), **attrs), 0


def searchsorted(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
                 **attrs: Any) -> tuple[Any, Any]:
    """One 1-D sorted sequence for every sample: one search of all the batch's values."""
    (seq, values), (seq_bdim, values_bdim) = args, bdims
    if seq_bdim is None and seq.ndim == 1:
        return apply(op, seq, values, **attrs), values_bdim
    return loop_fallback(op, args, bdims, size, **attrs)


def matrix_stack(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
                 **attrs: Any) -> tuple[Any, int]:
    """A matrix function over the last two axes, which batches over the leading ones: the
    batched arguments front-batched and padded to one sample rank, so that the stacks line up
    (unbatched ones broadcast against every sample)."""
    return apply(op, *align_front(args, bdims), **attrs), 0


RULES = {
    **{name: matrix_stack for name in ("inv", "det", "logabsdet", "slogdet_sign", "solve",
                                       "cholesky", "qr", "svd", "eigh", "matrix_exp")},
    **{name: along_axis for name in ("cumprod", "logcumsumexp", "cumextremum_index", "argsort",
                                     "mode_index")},
    "searchsorted": searchsorted, "unique": loop_fallback, "nonzero": loop_fallback,
}
