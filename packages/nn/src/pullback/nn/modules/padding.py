"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and
``CircularPad`` in 1, 2 and 3 dimensions (over :func:`pullback.nn.functional.pad`)."""

from __future__ import annotations

from typing import Any

from pullback.tensor import Tensor

from .. import functional as F
from .._checks import ntuple
from ..module import Module


class _PadNd(Module):
    _rank = 1
    _mode = "constant"

    def __init__(self, padding: Any, value: float = 0.0) -> None:
        super().__init__()
        self.padding = ntuple(padding, 2 * self._rank, type(self).__name__, "padding")
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


class _ConstantPadNd(_PadNd):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding, value)


class _ZeroPadNd(_PadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class _ModePadNd(_PadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding)


class ConstantPad1d(_ConstantPadNd):
    """Pad the last axis with ``value`` (``padding``: an int or (left, right))."""

    _rank = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two axes with ``value`` (an int or (left, right, top, bottom))."""

    _rank = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three axes with ``value`` (an int or six widths, last axis first)."""

    _rank = 3


class ZeroPad1d(_ZeroPadNd):
    """Pad the last axis with zeros."""

    _rank = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last two axes with zeros."""

    _rank = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last three axes with zeros."""

    _rank = 3


class ReflectionPad1d(_ModePadNd):
    """Pad the last axis with its reflection (the edge not repeated)."""

    _rank, _mode = 1, "reflect"


class ReflectionPad2d(_ModePadNd):
    """Pad the last two axes with their reflection."""

    _rank, _mode = 2, "reflect"


class ReflectionPad3d(_ModePadNd):
    """Pad the last three axes with their reflection."""

    _rank, _mode = 3, "reflect"


class ReplicationPad1d(_ModePadNd):
    """Pad the last axis by repeating its edge values."""

    _rank, _mode = 1, "replicate"


class ReplicationPad2d(_ModePadNd):
    """Pad the last two axes by repeating their edge values."""

    _rank, _mode = 2, "replicate"


class ReplicationPad3d(_ModePadNd):
    """Pad the last three axes by repeating their edge values."""

    _rank, _mode = 3, "replicate"


class CircularPad1d(_ModePadNd):
    """Pad the last axis by wrapping around."""

    _rank, _mode = 1, "circular"


class CircularPad2d(_ModePadNd):
    """Pad the last two axes by wrapping around."""

    _rank, _mode = 2, "circular"


class CircularPad3d(_ModePadNd):
    """Pad the last three axes by wrapping around."""

    _rank, _mode = 3, "circular"
