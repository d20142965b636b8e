"""``autocast``: a dispatch mode that picks each op's precision, as ``torch.autocast`` does.

Under ``autocast(device_type, dtype)`` the ops of that device type follow its policy
(:mod:`pullback._autocast_policy`, PyTorch's lists): ops listed as lower precision (matrix products,
convolutions, attention, recurrent layers) get their floating inputs cast to ``dtype``; ops
listed as float32 (losses, linear algebra, and on CUDA softmax, norms and transcendental
functions) get float16/bfloat16 inputs cast up to float32; every other op runs on what it is
given (and NumPy's promotion makes bfloat16 + float32 a float32). The casts are ordinary
``cast`` ops in the graph, so gradients reach float32 master weights in float32. float64
tensors are never cast.

Blocks nest as PyTorch's: the innermost block of a device type decides for that device type
(``enabled=False`` turns it off inside an enabled block), and blocks of other device types
leave it alone. What PyTorch refuses with a warning, pullback refuses with the same warning and
runs without autocast: a device type with no usable device (``"cuda"`` without a GPU), a dtype
other than float16/bfloat16. PyTorch's cast cache (``cache_enabled``) is accepted and has no
effect: each cast is made where it is needed.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable

from pullback.dispatch import DispatchMode, apply
from pullback.dtypes import bfloat16, float16, float32, float64, to_dtype
from pullback.errors import DeviceError
from pullback.registry import Op, get_op
from pullback.tensor import Tensor

from .._autocast_policy import active, innermost, policy_for

__all__ = ["autocast", "get_autocast_dtype", "is_autocast_available", "is_autocast_enabled"]

DEFAULT_DTYPES = {"cpu": bfloat16}  # every other device type: float16, as PyTorch
_LOW = (float16, bfloat16)


class autocast(contextlib.ContextDecorator):  # noqa: N801 - torch.autocast's name
    """Run the ops of ``device_type`` in mixed precision (see the module docstring); a context
    manager or a decorator.

    Args:
        device_type: ``"cpu"``, ``"cuda"`` or another device type a backend registered.
        dtype: ``pullback.bfloat16`` or ``pullback.float16`` (default: bfloat16 on the CPU,
            float16 elsewhere, as PyTorch).
        enabled: ``False`` turns autocast off for the device type inside the block.
        cache_enabled: accepted for PyTorch's signature; pullback keeps no cast cache.

    Example:
        >>> import pullback
        >>> a = pullback.ones(2, 3)
        >>> with pullback.autocast("cpu", dtype=pullback.bfloat16):
        ...     (a @ a.T).dtype, (a @ a.T).sum().dtype
        (bfloat16, bfloat16)
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device_type = device_type
        self.fast_dtype = to_dtype(dtype) if dtype is not None else \
            DEFAULT_DTYPES.get(device_type, float16)
        self.cache_enabled = cache_enabled
        self._enabled = bool(enabled)
        if self._enabled:
            self._enabled = _usable(device_type, self.fast_dtype)

    @property
    def dtype(self) -> Any:
        """The lower precision dtype of this block."""
        return self.fast_dtype

    @property
    def enabled(self) -> bool:
        """Whether this block casts (False when disabled, or refused with a warning)."""
        return self._enabled

    def __enter__(self) -> autocast:
        if not active.blocks:
            _MODE.__enter__()
        active.blocks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if not active.blocks or active.blocks[-1] is not self:
            raise RuntimeError("autocast blocks must exit in the reverse order they entered")
        active.blocks.pop()
        if not active.blocks:
            _MODE.__exit__(*exc)


def _usable(device_type: str, dtype: Any) -> bool:
    """Whether autocast can run for ``device_type`` in ``dtype``; PyTorch's warning if not."""
    from pullback.backends import backends

    if device_type != "cpu":
        registered = backends().get(device_type)
        if registered is None and device_type not in ("cuda", "xpu", "mps", "hpu"):
            raise DeviceError(f"autocast: unknown device type '{device_type}' (registered: "
                              f"{', '.join(sorted(backends()))})")
        if registered is None or not registered.is_available():
            warnings.warn(f"{device_type.upper()} is not available. Disabling autocast.",
                          UserWarning, stacklevel=3)
            return False
    if dtype not in _LOW:
        warnings.warn(f"In {device_type.upper()} autocast, but the target dtype is not "
                      f"supported. Disabling autocast.\n{device_type.upper()} Autocast only "
                      f"supports dtypes of bfloat16, float16 currently.", UserWarning,
                      stacklevel=3)
        return False
    return True


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an enabled ``autocast`` block is active for ``device_type`` (PyTorch's default
    without an argument is ``"cuda"``)."""
    block = innermost(device_type or "cuda")
    return block is not None and block.enabled


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype autocast uses for ``device_type`` now (its default outside any block)."""
    block = innermost(device_type)
    return block.fast_dtype if block is not None else DEFAULT_DTYPES.get(device_type, float16)


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can run on ``device_type`` here (the CPU always; others when a
    backend is available)."""
    from pullback.backends import backends

    backend = backends().get(device_type)
    return device_type == "cpu" or (backend is not None and backend.is_available())


# -- casting -------------------------------------------------------------------------------------
def _block_for(args: Any) -> Any:
    """The enabled block of the first Tensor argument's device type (or None)."""
    device = next((a.device for a in _tensors(args)), None)
    if device is None:
        return None
    block = innermost(device.type)
    return block if block is not None and block.enabled else None


def _tensors(values: Any) -> Any:
    for a in values:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _tensors(a)


def _cast_args(values: Any, precision: str, low: Any) -> Any:
    """``values`` (nested in lists and tuples) with their floating Tensors cast."""
    if isinstance(values, Tensor):
        dt = values.dtype
        if dt.kind not in "fV" or dt == float64:
            return values
        target = low if precision == "lower" else float32
        if dt == target or (precision == "float32" and dt not in _LOW):
            return values
        return apply(_CAST, values, dtype=target)
    if isinstance(values, (list, tuple)):
        return type(values)(_cast_args(v, precision, low) for v in values)
    return values


class _AutocastMode(DispatchMode):
    """The one dispatch mode behind every ``autocast`` block."""

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        block = _block_for(args)
        precision = policy_for(block.device_type).precision(op.name, attrs.get("mode")) \
            if block else None
        if precision is None:
            return apply(op, *args, **attrs)
        return apply(op, *_cast_args(args, precision, block.fast_dtype), **attrs)


def cast_call(name: str, fn: Callable[..., Any], args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:
    """Call the function ``name`` (see :func:`pullback._autocast_policy.autocast_function`)."""
    block = _block_for((*args, *kwargs.values()))
    precision = policy_for(block.device_type).precision(name) if block else None
    if precision is None:
        return fn(*args, **kwargs)
    args = _cast_args(args, precision, block.fast_dtype)
    kwargs = {k: _cast_args(v, precision, block.fast_dtype) for k, v in kwargs.items()}
    with autocast(block.device_type, block.fast_dtype, enabled=False):
        return fn(*args, **kwargs)


_CAST = get_op("cast")
_MODE = _AutocastMode()
