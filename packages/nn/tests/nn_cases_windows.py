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


def functional(name, **kwargs):
    """A case's ``make`` for ``nn.functional.<name>`` with fixed keyword arguments."""
    return lambda m: (lambda *args: getattr(m.functional, name)(*args, **kwargs))


def image_and_grid(shape, grid_shape, reach=1.3):
    return lambda rng: [rng.standard_normal(shape), rng.uniform(-reach, reach, grid_shape)]


def _interpolations():
    cases = []
    sizes = {3: (2, 3, 7), 4: (1, 2, 5, 6), 5: (1, 2, 3, 4, 5)}
    modes = {3: ["linear"], 4: ["bilinear", "bicubic"], 5: ["trilinear"]}
    resizes = [("x2", dict(scale_factor=2)), ("x1.7", dict(scale_factor=1.7)),
               ("x0.45", dict(scale_factor=0.45)), ("size", dict(size=11)),
               ("x2.5-recompute", dict(scale_factor=2.5, recompute_scale_factor=True))]
    for rank, shape in sizes.items():
        for mode in ["nearest", "nearest-exact", "area"] + modes[rank]:
            corners = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
            for label, resize in resizes:
                for align in corners:
                    extra = {} if align is None else {"align_corners": align}
                    cases.append(Case(f"Upsample-{mode}-{rank - 2}d-{label}"
                                      + ("-align" if align else ""),
                                      lambda m, r=resize, mo=mode, e=extra: m.Upsample(
                                          mode=mo, **r, **e), normal(*shape)))
    return cases


CASES += _interpolations() + [
    Case("UpsamplingNearest2d", lambda m: m.UpsamplingNearest2d(scale_factor=3), normal(1, 2, 3, 4)),
    Case("UpsamplingBilinear2d", lambda m: m.UpsamplingBilinear2d(size=(5, 7)), normal(1, 2, 3, 4)),
    Case("Upsample-bilinear-per-axis", lambda m: m.Upsample(scale_factor=(1.5, 0.7),
                                                            mode="bilinear"), normal(1, 2, 6, 7)),
    Case("PixelShuffle", lambda m: m.PixelShuffle(2), normal(2, 8, 3, 4)),
    Case("PixelShuffle-extra-batch", lambda m: m.PixelShuffle(3), normal(2, 1, 9, 2, 3)),
    Case("PixelUnshuffle", lambda m: m.PixelUnshuffle(2), normal(2, 3, 4, 6)),
    Case("ChannelShuffle", lambda m: m.ChannelShuffle(3), normal(2, 6, 2, 3)),
    Case("Unfold", lambda m: m.Unfold(3), normal(2, 3, 5, 6)),
    Case("Unfold-pad-stride-dilation", lambda m: m.Unfold((2, 3), dilation=(2, 1), padding=1,
                                                          stride=(1, 2)), normal(2, 2, 6, 7)),
    Case("Unfold-unbatched", lambda m: m.Unfold(2, stride=2), normal(3, 4, 6)),
    Case("Fold", lambda m: m.Fold((5, 6), 3), normal(2, 18, 12)),
    Case("Fold-overlap-pad-stride", lambda m: m.Fold((7, 6), (2, 3), dilation=(2, 1), padding=1,
                                                     stride=(1, 2)), normal(1, 12, 21)),
    Case("ZeroPad2d", lambda m: m.ZeroPad2d((1, 2, 0, 3)), normal(2, 2, 3, 4)),
    Case("ZeroPad1d-negative", lambda m: m.ZeroPad1d((-1, 2)), normal(2, 3, 5)),
    Case("ConstantPad1d-negative", lambda m: m.ConstantPad1d((2, -1), 0.5), normal(2, 3, 4)),
    Case("ZeroPad3d", lambda m: m.ZeroPad3d((1, 0, 0, 2, 1, 1)), normal(1, 2, 2, 3, 2)),
    Case("ConstantPad3d", lambda m: m.ConstantPad3d(1, 2.5), normal(1, 2, 2, 3, 2)),
    Case("ConstantPad2d-negative", lambda m: m.ConstantPad2d((2, -1, -2, 1), -1.0),
         normal(2, 2, 4, 5)),
    Case("ReflectionPad1d", lambda m: m.ReflectionPad1d((3, 1)), normal(2, 3, 5)),
    Case("ReflectionPad2d", lambda m: m.ReflectionPad2d((1, 2, 2, 0)), normal(2, 2, 4, 5)),
    Case("ReflectionPad3d-unbatched", lambda m: m.ReflectionPad3d(1), normal(2, 3, 3, 4)),
    Case("ReplicationPad1d", lambda m: m.ReplicationPad1d((2, 3)), normal(2, 3, 4)),
    Case("ReplicationPad2d-negative", lambda m: m.ReplicationPad2d((-1, 2, 1, -2)),
         normal(1, 2, 4, 5)),
    Case("ReplicationPad3d", lambda m: m.ReplicationPad3d((1, 0, 2, 1, 0, 1)),
         normal(1, 2, 2, 3, 3)),
    Case("CircularPad1d", lambda m: m.CircularPad1d((2, 1)), normal(2, 3, 4)),
    Case("CircularPad2d-negative", lambda m: m.CircularPad2d((2, -1, 1, 1)), normal(1, 2, 3, 4)),
    Case("CircularPad3d", lambda m: m.CircularPad3d(1), normal(1, 1, 3, 3, 3)),
    # functions
    Case("F.pad-constant-4-axes", functional("pad", pad=(1, -1, 2, 0, -1, 1, 1, 1), value=0.5),
         normal(3, 4, 3, 4)),
    Case("F.pad-reflect-negative", functional("pad", pad=(2, -1), mode="reflect"), normal(2, 6)),
    Case("F.affine_grid-2d", functional("affine_grid", size=(2, 3, 4, 5), align_corners=False),
         normal(2, 2, 3)),
    Case("F.affine_grid-3d-align", functional("affine_grid", size=(2, 1, 3, 4, 2),
                                              align_corners=True), normal(2, 3, 4)),
]
for _mode in ("bilinear", "nearest", "bicubic"):
    for _padding in ("zeros", "border", "reflection"):
        for _align in (False, True):
            CASES.append(Case(f"F.grid_sample-{_mode}-{_padding}" + ("-align" if _align else ""),
                              functional("grid_sample", mode=_mode, padding_mode=_padding,
                                         align_corners=_align),
                              image_and_grid((2, 3, 5, 6), (2, 4, 3, 2))))
            if _mode != "bicubic":
                CASES.append(Case(f"F.grid_sample-3d-{_mode}-{_padding}"
                                  + ("-align" if _align else ""),
                                  functional("grid_sample", mode=_mode, padding_mode=_padding,
                                             align_corners=_align),
                                  image_and_grid((1, 2, 3, 4, 5), (1, 2, 3, 2, 3))))
