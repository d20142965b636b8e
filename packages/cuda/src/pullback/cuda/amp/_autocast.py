"""``autocast``: a dispatch mode that picks each op's precision, as ``torch.autocast`` does.

Ops in :data:`LOW_PRECISION_OPS` (matrix products, attention, convolution) get their floating
inputs cast to the autocast dtype: cuBLAS, and pullback's own matmul kernel, multiply in it and
accumulate in float32. Ops in :data:`FLOAT32_OPS` (reductions, norms, softmax, losses,
exp/log/pow) get float16/bfloat16 inputs cast up to float32. Every other op runs on what it is
given (NumPy's promotion makes float16 + float32 a float32). The casts are ordinary ``cast`` ops
in the graph, so gradients flow back to float32 master weights in float32.

Nesting works as in PyTorch: the innermost ``autocast`` block decides (``enabled=False`` turns
it off inside an enabled block). float64 tensors are never cast.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from pullback.dispatch import DispatchMode, apply
from pullback.dtypes import bfloat16, float16, float32, float64, to_dtype
from pullback.errors import DTypeError
from pullback.registry import Op
from pullback.tensor import Tensor

LOW_PRECISION_OPS = frozenset({
    "matmul", "einsum", "nn.linear", "nn.conv2d", "nn.scaled_dot_product_attention",
})
"""Ops run in the autocast dtype."""

FLOAT32_OPS = frozenset({
    "sum", "mean", "prod", "cumsum", "logsumexp", "norm2", "exp", "log", "log1p", "expm1",
    "pow", "rsqrt", "reciprocal", "softplus", "nn.softmax", "nn.log_softmax", "nn.layer_norm",
    "nn.cross_entropy",
})
"""Ops run in float32 under autocast."""


class _Stack(threading.local):
    def __init__(self) -> None:
        self.blocks: list[autocast] = []


_active = _Stack()


class autocast(contextlib.ContextDecorator):  # noqa: N801 - torch.autocast's name
    """Run matrix products in ``dtype`` and precision-sensitive ops in float32 (see the module
    docstring); usable as ``with autocast():`` or as a decorator.

    Args:
        dtype: ``pullback.float16`` (default) or ``pullback.bfloat16``.
        device_type: the device type whose ops are cast (``"cuda"``; ``"cpu"`` works too, which
            the tests use).
        enabled: ``False`` turns autocast off inside the block.
    """

    def __init__(self, dtype: Any = float16, *, device_type: str = "cuda",
                 enabled: bool = True) -> None:
        dt = to_dtype(dtype)
        if dt not in (float16, bfloat16):
            raise DTypeError(f"autocast: dtype must be float16 or bfloat16, got {dt}")
        self.dtype = dt
        self.device_type = device_type
        self.enabled = bool(enabled)

    def __enter__(self) -> autocast:
        if not _active.blocks:
            _MODE.__enter__()
        _active.blocks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if not _active.blocks or _active.blocks[-1] is not self:
            raise RuntimeError("autocast blocks must exit in the reverse order they entered")
        _active.blocks.pop()
        if not _active.blocks:
            _MODE.__exit__(*exc)


class _AutocastMode(DispatchMode):
    """The one dispatch mode behind every ``autocast`` block; the innermost block decides."""

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        name = op.name
        low = name in LOW_PRECISION_OPS
        if not (low or name in FLOAT32_OPS) or not _active.blocks:
            return apply(op, *args, **attrs)
        block = _active.blocks[-1]
        device = next((a.device for a in args if isinstance(a, Tensor)), None)
        if not block.enabled or device is None or device.type != block.device_type:
            return apply(op, *args, **attrs)
        if low:
            cast = tuple(_to(a, block.dtype, lambda dt: dt != float64) for a in args)
        else:
            cast = tuple(_to(a, float32, lambda dt: dt in (float16, bfloat16)) for a in args)
        return apply(op, *cast, **attrs)


def _to(a: Any, dtype: Any, eligible: Any) -> Any:
    """``a`` cast to ``dtype`` when it is a floating Tensor of an eligible dtype."""
    if isinstance(a, Tensor) and a.dtype.kind in "fV" and a.dtype != dtype and eligible(a.dtype):
        return apply(_CAST, a, dtype=dtype)
    return a


def _cast_op() -> Op:
    from pullback.registry import get_op

    return get_op("cast")


_CAST = _cast_op()
_MODE = _AutocastMode()
