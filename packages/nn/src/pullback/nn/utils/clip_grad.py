"""``torch.nn.utils.clip_grad``: ``clip_grad_norm_`` and ``clip_grad_value_``, which are
pullback.optim's (gradient clipping belongs to the optimizer step), imported when used."""

from typing import Any

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]  # noqa: F822 - on first use


def __getattr__(name: str) -> Any:
    if name in ("clip_grad_norm_", "clip_grad_value_"):
        from pullback.optim import clip

        return getattr(clip, name)
    if name == "clip_grad_norm":  # PyTorch's deprecated spelling
        from pullback.optim.clip import clip_grad_norm_

        return clip_grad_norm_
    raise AttributeError(f"module 'pullback.nn.utils.clip_grad' has no attribute '{name}'")
