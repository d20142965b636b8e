"""Embedding lookup: rows of a weight matrix picked by integer indices."""

from __future__ import annotations

import pullback
from pullback.errors import IndexOutOfRangeError
from pullback.tensor import Tensor

from .._checks import expect_integer


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """``weight[input]`` with shape ``input.shape + (embedding_dim,)``.

    Rows at ``padding_idx`` are looked up as usual but receive no gradient (PyTorch's rule).
    """
    expect_integer("embedding", input)
    num = weight.shape[0]
    if input.numel():
        low, high = int(input.array.min()), int(input.array.max())
        if low < 0 or high >= num:
            raise IndexOutOfRangeError(
                f"embedding: index {low if low < 0 else high} is out of range for "
                f"{num} embeddings (weight of shape {tuple(weight.shape)})"
            )
    flat = input.reshape(-1)
    rows = pullback.index_select(weight, 0, flat)
    if padding_idx is not None:
        padding_idx = padding_idx % num
        is_pad = (flat == padding_idx).reshape(-1, 1)
        rows = pullback.where(is_pad, pullback.index_select(weight.detach(), 0, flat), rows)
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))
