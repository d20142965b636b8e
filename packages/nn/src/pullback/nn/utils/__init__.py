"""``pullback.nn.utils`` (PyTorch's ``torch.nn.utils``): helpers around the layers, one
submodule per subject (``rnn``: packed and padded sequences; ``convert_parameters``: parameters
as one vector; ``parametrize`` and ``parametrizations``: tensors computed from others, weight
and spectral norm; ``weight_norm``/``spectral_norm``: PyTorch's older hook-based forms).
``clip_grad_norm_`` and ``clip_grad_value_`` are pullback.optim's (gradient clipping belongs to
the optimizer step), reached here under PyTorch's names."""

from typing import Any

from . import convert_parameters, parametrizations, parametrize, rnn
from ._hooked_norms import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "convert_parameters", "parameters_to_vector",
           "parametrizations", "parametrize", "remove_spectral_norm", "remove_weight_norm", "rnn",
           "spectral_norm", "vector_to_parameters", "weight_norm"]

_FROM_OPTIM = ("clip_grad_norm_", "clip_grad_value_")


def __getattr__(name: str) -> Any:
    if name in _FROM_OPTIM:  # imported when used: pullback-nn does not require pullback-optim
        from pullback.optim import clip

        return getattr(clip, name)
    raise AttributeError(f"module 'pullback.nn.utils' has no attribute '{name}'")
