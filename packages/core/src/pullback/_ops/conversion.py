"""Copies and conversions: clone, contiguous, dtype casts and device transfers."""

from __future__ import annotations

from typing import Any

from ..autograd.function import Function, FunctionCtx
from ..backends import Device
from ..dispatch import apply
from ..dtypes import to_dtype
from ..errors import DeviceError, DTypeError
from ..registry import Op
from ..tensor import Tensor
from ._declare import declare
from .elementwise import CAST

COPY = declare(Op("copy", lambda xp: lambda x: x.copy(), save_inputs=False, doc="a copy"))
COPY.def_grad(lambda F, g, out, x: (g,))


def clone(x: Tensor) -> Tensor:
    """A copy that stays in the graph."""
    return apply(COPY, x)


def contiguous(x: Tensor) -> Tensor:
    """``x`` itself when C-contiguous, else a C-contiguous copy."""
    flags = getattr(x.array, "flags", None)
    if flags is not None and flags.c_contiguous:
        return x
    return apply(COPY, x)


class _ToDevice(Function):
    """Device transfer; the gradient goes back to the source device."""

    @staticmethod
    def forward(ctx: FunctionCtx, x: Tensor, target: Device) -> Tensor:
        ctx.source = x.device
        return _transfer(x, target)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Any:
        return to(grad, ctx.source), None


def _transfer(x: Tensor, target: Device) -> Tensor:
    if x.device.type == target.type and x.device.type != "cpu":
        arr = target.backend.from_host(x.device.backend.to_host(x.array), target.index or 0) \
            if x.device.index != target.index else x.array
    elif target.type == "cpu":
        arr = x.device.backend.to_host(x.array)
    elif x.device.type == "cpu":
        arr = target.backend.from_host(x.array, target.index or 0)
    else:  # between two non-CPU backends: through the host
        arr = target.backend.from_host(x.device.backend.to_host(x.array), target.index or 0)
    return Tensor._wrap(arr, target)


def _parse_to(x: Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to(): unexpected arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, Device):
            device = a
        elif isinstance(a, str) and (":" in a or a in _device_names()):
            device = Device(a)
        elif isinstance(a, str):
            dtype = _dtype_or_device_error(a)
        else:
            dtype = to_dtype(a)
    return (Device(device) if device is not None else None,
            to_dtype(dtype) if dtype is not None else None)


def _dtype_or_device_error(name: str) -> Any:
    """The dtype called ``name``; a string that is neither a dtype nor a device type is most
    likely a device (``"tpu"``, ``"mps"``): the error says so and lists both."""
    try:
        return to_dtype(name)
    except DTypeError:
        raise DeviceError(
            f"to(): {name!r} is neither a device type (registered: "
            f"{', '.join(sorted(_device_names()))}; others come from backend plugins, see "
            "`python -m pullback plugins`) nor a dtype name") from None


def _device_names() -> set[str]:
    # Device types of known distributions count too, so that x.to("cuda") without pullback-cuda
    # says which package to install instead of "unknown dtype".
    from ..backends import _KNOWN_PROVIDERS, backends

    return set(backends()) | set(_KNOWN_PROVIDERS)


def to(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Convert dtype and/or move to a device (differentiable); self when nothing changes."""
    device, dtype = _parse_to(x, args, dict(kwargs))
    out = x
    if device is not None and device is not x.device:
        out = _ToDevice.apply(out, device)
    if dtype is not None and dtype != out.dtype:
        out = apply(CAST, out, dtype=dtype)
    return out
