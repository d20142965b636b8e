"""Resizing layers: ``Upsample`` and the legacy ``UpsamplingNearest2d``/``UpsamplingBilinear2d``
(over :func:`pullback.nn.functional.interpolate`)."""

from __future__ import annotations

from typing import Any

from pullback.errors import ArgumentError
from pullback.tensor import Tensor

from .. import functional as F
from ..functional.interpolate import _MODES as INTERPOLATION_MODES
from ..module import Module


class Upsample(Module):
    """Resize to ``size`` or by ``scale_factor`` with an interpolation ``mode`` (nearest,
    nearest-exact, linear, bilinear, bicubic, trilinear, area)."""

    def __init__(self, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        if mode not in INTERPOLATION_MODES:  # checked when built, where a typo is made
            raise ArgumentError(f"{type(self).__name__}: mode must be one of "
                                f"{INTERPOLATION_MODES}, got {mode!r}")
        self.size = size
        self.scale_factor = float(scale_factor) if isinstance(scale_factor, (int, float)) \
            else (tuple(float(f) for f in scale_factor) if scale_factor else None)
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None \
            else f"size={self.size!r}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour resizing of (N, C, H, W)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear resizing of (N, C, H, W) with ``align_corners=True``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
