"""``pullback.amp``: mixed precision, as ``torch.amp``.

:class:`autocast` runs matrix products, convolutions and attention in bfloat16 or float16 and
precision-sensitive ops in float32 (PyTorch's per-device lists), and :class:`GradScaler` keeps
float16 gradients from underflowing. ``pullback.autocast`` is :class:`autocast`, and
``pullback.cuda.amp`` holds PyTorch's older CUDA-only spellings.

Example::

    import pullback as pb

    scaler = pb.amp.GradScaler("cuda")        # warns and disables itself without a GPU
    for x, y in batches:
        with pb.autocast("cuda", dtype=pb.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)                # skipped when a gradient is inf/nan
        scaler.update()
        optimizer.zero_grad()
"""

from .._autocast_policy import POLICIES, Policy, autocast_function
from .autocast_mode import (
    autocast, get_autocast_dtype, is_autocast_available, is_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = [
    "GradScaler", "POLICIES", "Policy", "autocast", "autocast_function", "get_autocast_dtype",
    "is_autocast_available", "is_autocast_enabled",
]
