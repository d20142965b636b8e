"""``pad`` (PyTorch's ``F.pad``): every mode, negative widths crop."""

from __future__ import annotations

from typing import Sequence

import pullback
from pullback.errors import ArgumentError, ShapeError, UnsupportedError
from pullback.tensor import Tensor

_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad (or, with negative widths, crop) the trailing axes of ``input``.

    ``pad`` lists ``(before, after)`` widths starting from the last axis:
    ``(left, right, top, bottom, ...)``. ``mode`` is ``"constant"`` (``value``, 0 by default),
    ``"reflect"`` (mirror without repeating the edge), ``"replicate"`` (repeat the edge) or
    ``"circular"`` (wrap around). As in PyTorch a negative width removes that many entries
    first, and the other modes than constant pad the last 1, 2 or 3 axes of an input with one
    or two axes more (``(C, W)`` or ``(N, C, W)`` for two widths, and so on).

    Example:
        >>> import pullback
        >>> import pullback.nn.functional as F
        >>> F.pad(pullback.arange(4.0).reshape(1, 4), (2, -1), mode="reflect").tolist()
        [[2.0, 1.0, 0.0, 1.0, 2.0]]
    """
    if mode not in _MODES:
        raise UnsupportedError(f"pad: mode must be one of {_MODES}, got {mode!r}")
    widths = [int(w) for w in pad]
    if len(widths) % 2 or len(widths) // 2 > input.ndim:
        raise ShapeError(f"pad: {len(widths)} widths do not fit a {input.ndim}-d input of "
                         f"shape {tuple(input.shape)} (two per padded axis, from the last)")
    axes = len(widths) // 2
    if mode != "constant":
        if value:
            raise ArgumentError(f"pad: value={value} is only used by mode='constant', got "
                                f"mode={mode!r}")
        if axes > 3 or input.ndim not in (axes + 1, axes + 2):
            raise ShapeError(f"pad: mode {mode!r} with {len(widths)} widths pads the last "
                             f"{axes} axes of a {axes + 1}-d or {axes + 2}-d input, got shape "
                             f"{tuple(input.shape)}")
    key = [slice(None)] * input.ndim
    positive = []
    for i in range(axes):
        axis = input.ndim - 1 - i
        before, after = widths[2 * i], widths[2 * i + 1]
        size = input.shape[axis]
        if max(-before, 0) + max(-after, 0) > size:
            raise ShapeError(f"pad: widths ({before}, {after}) crop more than the {size} "
                             f"entries of axis {axis} (shape {tuple(input.shape)})")
        key[axis] = slice(max(-before, 0), size - max(-after, 0))
        positive += [max(before, 0), max(after, 0)]
    out = input[tuple(key)] if any(w < 0 for w in widths) else input
    if not any(positive):
        return out
    if mode == "constant":
        return pullback.pad(out, positive, value=0.0 if value is None else float(value))
    return pullback.pad(out, positive, mode=mode)
