"""The ``"onnx"`` rules of ``nn.im2col`` (``F.unfold``) and ``nn.col2im`` (``F.fold``), which
ONNX has no operator for up to opset 17 (Col2Im came in 18, Im2Col never): both are one
``Gather`` with a table of positions computed here, so every value is moved (or added) exactly
as pullback's kernels do, infinities and NaNs included.

``im2col`` pads the input, flattens its spatial axes and gathers the (kh, kw, Ho, Wo) window
positions. ``col2im`` gathers, for every position of the padded output, the columns that land
there (a zero column appended fills the rows of positions that fewer windows reach) and adds
them in the order the kernel adds them (by kernel offset), then crops the padding.
"""

from __future__ import annotations

import numpy as np

from .._ir import Node
from .builder import OnnxBuilder
from .elementwise import OnnxRule


def _positions(node: Node, spatial: tuple[int, int]) -> tuple[np.ndarray, tuple[int, int]]:
    """The flat position in the padded input of every (kh, kw, Ho, Wo) window tap, and the
    padded size."""
    attrs = node.attrs
    (kh, kw), (sh, sw), (dh, dw) = attrs["kernel_size"], attrs["stride"], attrs["dilation"]
    (pt, pb), (pl, pr) = attrs["padding"]
    hp, wp = spatial[0] + pt + pb, spatial[1] + pl + pr
    ho, wo = (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1
    i, j, r, q = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(ho), np.arange(wo),
                             indexing="ij")
    return (r * sh + i * dh) * wp + (q * sw + j * dw), (hp, wp)


def _flat_padding(padding: tuple[tuple[int, int], ...]) -> list[int]:
    (pt, pb), (pl, pr) = padding
    return [0, 0, pt, pl, 0, 0, pb, pr]


def _im2col(node: Node, b: OnnxBuilder) -> None:
    x = node.inputs[0]
    positions, (hp, wp) = _positions(node, x.shape[2:])
    padded = b.emit("Pad", [b.name(x), b.ints(_flat_padding(node.attrs["padding"]), "pads"),
                            b.scalar(0, x.dtype)], mode="constant")
    flat = b.emit("Reshape", [padded, b.ints([0, 0, hp * wp])])  # 0: the input's size
    b.emit("Gather", [flat, b.constant(positions.astype(np.int64), "windows")],
           [b.output(node.output)], axis=2)


def _col2im(node: Node, b: OnnxBuilder) -> None:
    cols = node.inputs[0]
    height, width = node.attrs["input_shape"][2:]
    positions, (hp, wp) = _positions(node, (height, width))
    taps = positions.reshape(-1)
    # for each padded position, the columns landing there in the kernel's order, padded with
    # the index of a zero column
    sources = [np.flatnonzero(taps == p) for p in range(hp * wp)]
    table = np.full((hp * wp, max(1, max(len(s) for s in sources))), taps.size, np.int64)
    for p, s in enumerate(sources):
        table[p, :len(s)] = s
    flat = b.emit("Reshape", [b.name(cols), b.ints([0, 0, taps.size])])
    with_zero = b.emit("Pad", [flat, b.ints([0, 0, 0, 0, 0, 1], "pads"),
                               b.scalar(0, cols.dtype)], mode="constant")
    gathered = b.emit("Gather", [with_zero, b.constant(table, "fold_sources")], axis=2)
    total = b.emit("ReduceSum", [gathered, b.ints([3], "axes")], keepdims=0)
    image = b.emit("Reshape", [total, b.ints([0, 0, hp, wp])])
    (pt, _), (pl, _) = node.attrs["padding"]
    b.emit("Slice", [image, b.ints([pt, pl], "starts"), b.ints([pt + height, pl + width], "ends"),
                     b.ints([2, 3], "axes")], [b.output(node.output)])


WINDOW_RULES: dict[str, OnnxRule] = {"nn.im2col": _im2col, "nn.col2im": _col2im}
