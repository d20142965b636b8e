"""The batching rule of the elementwise family: one rule for every elementwise op.

An elementwise op broadcasts its inputs as NumPy does, aligning dims from the right. Putting
each batched input's batch dim first, padded with size-1 dims up to the largest sample rank,
keeps that alignment for every sample, while unbatched inputs broadcast against all samples.
"""

from __future__ import annotations

from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op
from pullback.tensor import Tensor

from ._util import align_front


def elementwise(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
                **attrs: Any) -> tuple[Any, int]:
    """Batch an elementwise op (attributes such as ``approximate`` or ``dtype`` pass through)."""
    same: Any = ()
    for a, b in zip(args, bdims):
        if isinstance(a, Tensor):
            key = None if b is None else (b, a.ndim)
            if same == ():
                same = key
            elif key != same:
                same = None
                break
    if same:  # every tensor batched alike (a unary op, most often): the layout is kept
        return apply(op, *args, **attrs), same[0]
    return apply(op, *align_front(args, bdims), **attrs), 0
