"""Parity cases of the convolution, pooling and resampling layers (run by
test_parity_windows.py through :func:`nn_parity.check_layer`)."""

from __future__ import annotations

import numpy as np

from nn_parity import Case, normal


def pooled(kernel, rank, *shape):
    """Inputs of a max unpooling layer: the values and indices of a max pooling of a random
    input (made by NumPy: the first maximum of each non-overlapping window)."""
    def make(rng):
        x = rng.standard_normal(shape)
        n, c = shape[:2]
        spatial = shape[2:]
        out = tuple(s // kernel for s in spatial)
        windows = x[(slice(None), slice(None)) + tuple(slice(0, o * kernel) for o in out)]
        split = windows.reshape((n, c) + sum(((o, kernel) for o in out), ()))
        order = tuple(range(2, 2 + 2 * rank, 2)) + tuple(range(3, 3 + 2 * rank, 2))
        blocks = split.transpose((0, 1) + order).reshape((n, c) + out + (-1,))
        first = blocks.argmax(-1)
        offsets = np.unravel_index(first, (kernel,) * rank)
        grid = np.meshgrid(*(np.arange(o) for o in out), indexing="ij")
        coords = [g * kernel + off for g, off in zip(grid, offsets)]
        flat = np.ravel_multi_index(coords, spatial)
        return [np.take_along_axis(blocks, first[..., None], -1)[..., 0], flat]
    return make


CASES = [
    # convolutions
    Case("Conv3d", lambda m: m.Conv3d(2, 3, 2), normal(2, 2, 4, 3, 5)),
    Case("Conv3d-stride-pad-dil-groups", lambda m: m.Conv3d(4, 6, (3, 2, 2), stride=(2, 1, 2),
                                                            padding=(1, 0, 1), dilation=(1, 2, 1),
                                                            groups=2), normal(2, 4, 5, 6, 5)),
    Case("Conv3d-same-nobias", lambda m: m.Conv3d(2, 2, (2, 3, 2), padding="same", bias=False),
         normal(1, 2, 4, 4, 3)),
    Case("Conv3d-unbatched", lambda m: m.Conv3d(2, 3, 2), normal(2, 3, 3, 3)),
    Case("Conv1d-reflect", lambda m: m.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"),
         normal(2, 2, 7)),
    Case("Conv2d-replicate", lambda m: m.Conv2d(2, 3, 3, padding=(1, 2),
                                                padding_mode="replicate"), normal(2, 2, 5, 6)),
    Case("Conv2d-circular-same", lambda m: m.Conv2d(2, 2, (3, 4), padding="same",
                                                    padding_mode="circular"), normal(1, 2, 5, 6)),
    Case("Conv3d-reflect", lambda m: m.Conv3d(2, 2, 3, padding=1, padding_mode="reflect"),
         normal(1, 2, 4, 4, 4)),
    Case("ConvTranspose1d", lambda m: m.ConvTranspose1d(3, 2, 3, stride=2, padding=1,
                                                        output_padding=1), normal(2, 3, 5)),
    Case("ConvTranspose1d-groups-dilation", lambda m: m.ConvTranspose1d(4, 6, 3, groups=2,
                                                                        dilation=2),
         normal(2, 4, 4)),
    Case("ConvTranspose3d", lambda m: m.ConvTranspose3d(2, 3, (2, 3, 2), stride=(2, 1, 2),
                                                        padding=(0, 1, 1)), normal(2, 2, 3, 3, 4)),
    Case("ConvTranspose3d-outpad-groups-nobias",
         lambda m: m.ConvTranspose3d(2, 4, 3, stride=2, output_padding=1, groups=2, bias=False),
         normal(1, 2, 2, 3, 2)),
    Case("ConvTranspose2d-output_size", lambda m: m.ConvTranspose2d(2, 3, 3, stride=2),
         normal(1, 2, 3, 3), kwargs={"output_size": (8, 7)}),
    # max pooling
    Case("MaxPool1d", lambda m: m.MaxPool1d(3, stride=2, padding=1), normal(2, 3, 9)),
    Case("MaxPool1d-ceil-dilation", lambda m: m.MaxPool1d(2, stride=2, dilation=2,
                                                          ceil_mode=True), normal(2, 2, 8)),
    Case("MaxPool1d-indices", lambda m: m.MaxPool1d(3, 2, return_indices=True), normal(2, 2, 10)),
    Case("MaxPool2d-ceil", lambda m: m.MaxPool2d(3, stride=2, ceil_mode=True), normal(2, 2, 8, 7)),
    Case("MaxPool2d-ceil-pad-indices", lambda m: m.MaxPool2d(3, 2, 1, return_indices=True,
                                                             ceil_mode=True), normal(1, 2, 6, 7)),
    Case("MaxPool3d", lambda m: m.MaxPool3d(2), normal(2, 2, 4, 5, 4)),
    Case("MaxPool3d-stride-pad-dil-ceil-indices",
         lambda m: m.MaxPool3d((3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1),
                               ceil_mode=True, return_indices=True), normal(1, 2, 6, 5, 6)),
    Case("MaxPool3d-unbatched", lambda m: m.MaxPool3d(2, return_indices=True), normal(2, 4, 4, 4)),
    # average pooling
    Case("AvgPool1d", lambda m: m.AvgPool1d(3, stride=2, padding=1), normal(2, 3, 9)),
    Case("AvgPool1d-ceil-exclude-pad", lambda m: m.AvgPool1d(3, 2, 1, ceil_mode=True,
                                                             count_include_pad=False),
         normal(2, 2, 8)),
    Case("AvgPool2d-ceil", lambda m: m.AvgPool2d(3, stride=2, ceil_mode=True), normal(2, 2, 8, 7)),
    Case("AvgPool2d-ceil-pad", lambda m: m.AvgPool2d(3, 2, 1, ceil_mode=True), normal(2, 2, 6, 7)),
    Case("AvgPool2d-divisor_override", lambda m: m.AvgPool2d(2, 1, 1, divisor_override=3),
         normal(1, 2, 4, 5)),
    Case("AvgPool3d", lambda m: m.AvgPool3d(2), normal(2, 2, 4, 5, 4)),
    Case("AvgPool3d-pad-ceil-exclude", lambda m: m.AvgPool3d(3, 2, 1, ceil_mode=True,
                                                             count_include_pad=False),
         normal(1, 2, 6, 5, 4)),
    Case("AvgPool3d-divisor", lambda m: m.AvgPool3d((2, 1, 2), divisor_override=5),
         normal(1, 1, 4, 3, 4)),
    # power-average pooling
    Case("LPPool1d", lambda m: m.LPPool1d(2, 3, stride=2), normal(2, 3, 9)),
    Case("LPPool2d", lambda m: m.LPPool2d(3, (2, 3)), lambda r: [r.uniform(0.5, 2, (2, 2, 6, 7))]),
    Case("LPPool2d-ceil", lambda m: m.LPPool2d(1.5, 2, ceil_mode=True),
         lambda r: [r.uniform(0.5, 2, (1, 2, 5, 5))]),
    Case("LPPool3d", lambda m: m.LPPool3d(2, 2), normal(1, 2, 4, 4, 4)),
    # adaptive pooling
    Case("AdaptiveAvgPool1d", lambda m: m.AdaptiveAvgPool1d(4), normal(2, 3, 9)),
    Case("AdaptiveAvgPool2d-none", lambda m: m.AdaptiveAvgPool2d((None, 3)), normal(2, 2, 5, 7)),
    Case("AdaptiveAvgPool3d", lambda m: m.AdaptiveAvgPool3d((2, 3, 4)), normal(1, 2, 5, 7, 6)),
    Case("AdaptiveMaxPool1d", lambda m: m.AdaptiveMaxPool1d(4, return_indices=True),
         normal(2, 3, 9)),
    Case("AdaptiveMaxPool2d", lambda m: m.AdaptiveMaxPool2d((3, 4)), normal(2, 2, 7, 9)),
    Case("AdaptiveMaxPool2d-indices-upsample", lambda m: m.AdaptiveMaxPool2d(5, return_indices=True),
         normal(1, 2, 3, 4)),
    Case("AdaptiveMaxPool3d", lambda m: m.AdaptiveMaxPool3d((2, 3, 2), return_indices=True),
         normal(1, 2, 5, 7, 4)),
    Case("AdaptiveMaxPool2d-ties", lambda m: m.AdaptiveMaxPool2d(2, return_indices=True),
         lambda r: [np.round(r.standard_normal((1, 2, 5, 5)))]),
    # max unpooling
    Case("MaxUnpool1d", lambda m: m.MaxUnpool1d(2), pooled(2, 1, 2, 3, 8)),
    Case("MaxUnpool2d", lambda m: m.MaxUnpool2d(2), pooled(2, 2, 2, 2, 6, 4)),
    Case("MaxUnpool2d-output_size", lambda m: m.MaxUnpool2d(2), pooled(2, 2, 1, 2, 6, 4),
         kwargs={"output_size": (7, 5)}),
    Case("MaxUnpool3d", lambda m: m.MaxUnpool3d(2), pooled(2, 3, 1, 2, 4, 4, 6)),
]
