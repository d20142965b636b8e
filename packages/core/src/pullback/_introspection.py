"""Questions ported code asks about tensors and dtypes: ``is_tensor``, ``numel``, ``finfo``,
``iinfo``, ``Size``, ``dtype``, and the CPU generator's ``get_rng_state``/``set_rng_state``,
under PyTorch's names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dtypes as _dtypes
from .dtypes import get_default_dtype, to_dtype
from .tensor import Tensor

dtype = np.dtype  # pullback's dtypes are NumPy dtypes: isinstance(x.dtype, pullback.dtype)


class Size(tuple[int, ...]):
    """A shape, as ``torch.Size``: a tuple of ints (``tensor.shape`` is a plain tuple here)."""

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return int(np.prod(self, dtype=np.int64))


def is_tensor(obj: Any) -> bool:
    """Whether ``obj`` is a pullback Tensor (Parameters included)."""
    return isinstance(obj, Tensor)


def numel(tensor: Tensor) -> int:
    """The number of elements of ``tensor``."""
    return int(tensor.array.size)


@dataclass(frozen=True)
class FloatInfo:
    """Machine limits of a floating dtype, as Python numbers (``torch.finfo``'s fields)."""

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str


def finfo(type: Any = None) -> FloatInfo:  # noqa: A002 - torch's argument name
    """Machine limits of a floating dtype, the default dtype's when none is given (bfloat16
    included)."""
    info = _dtypes.finfo(type if type is not None else get_default_dtype())
    return FloatInfo(int(info.bits), float(info.eps), float(info.max), float(info.min),
                     float(info.tiny), float(info.smallest_normal), 10.0 ** -int(info.precision),
                     str(info.dtype))


def iinfo(type: Any) -> Any:  # noqa: A002
    """Limits of an integer dtype (``min``, ``max``, ``bits``)."""
    return np.iinfo(to_dtype(type))


def get_rng_state() -> dict[str, Any]:
    """The CPU generator's state (a JSON-serializable dict, where PyTorch returns bytes), for
    :func:`set_rng_state` or a checkpoint."""
    from .backends import Device

    return Device("cpu").backend.get_rng_state()


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the CPU generator's state from :func:`get_rng_state`."""
    from .backends import Device

    Device("cpu").backend.set_rng_state(state)
