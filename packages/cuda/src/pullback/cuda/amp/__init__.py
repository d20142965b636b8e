"""Mixed precision: :class:`autocast` runs matrix products in float16/bfloat16, and
:class:`GradScaler` keeps float16 gradients from underflowing.

Example::

    from pullback.cuda.amp import GradScaler, autocast

    scaler = GradScaler()
    for x, y in batches:
        with autocast(dtype=pb.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)       # skipped when a gradient is inf/nan
        scaler.update()
        optimizer.zero_grad()
"""

from ._autocast import FLOAT32_OPS, LOW_PRECISION_OPS, autocast
from ._grad_scaler import GradScaler

__all__ = ["FLOAT32_OPS", "GradScaler", "LOW_PRECISION_OPS", "autocast"]
