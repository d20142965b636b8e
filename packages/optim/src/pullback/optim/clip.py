"""Gradient clipping: ``clip_grad_norm_`` and ``clip_grad_value_``.

PyTorch keeps these in ``torch.nn.utils``; pullback keeps them here, because pullback.nn is a
separate distribution and clipping is part of an optimizer step, not of a model.
"""

from __future__ import annotations

import math
from typing import Iterable

from pullback import Tensor, tensor

from .errors import HyperparameterError, NonFiniteNormError, OptimizerTypeError
from .optimizer import mark_modified


def _grads(parameters: Tensor | Iterable[Tensor], fn: str) -> list[Tensor]:
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    for i, p in enumerate(params):
        if not isinstance(p, Tensor):
            raise OptimizerTypeError(f"{fn}: parameter {i} is {type(p).__name__}, not a Tensor")
    return [p.grad for p in params if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False) -> Tensor:
    """Scale the gradients in place so that their total norm is at most ``max_norm``.

    The total norm is the ``norm_type``-norm of all the gradients concatenated into one vector
    (``inf`` for the largest absolute value). When it exceeds ``max_norm``, every gradient is
    multiplied by ``max_norm / (total_norm + 1e-6)``, as in ``torch.nn.utils.clip_grad_norm_``.

    Args:
        parameters: a Tensor or an iterable of Tensors whose ``.grad`` to clip (parameters
            without a gradient are skipped).
        max_norm: the largest total norm allowed.
        norm_type: the order of the norm (``2.0``, ``1.0``, ``float("inf")``, any p > 0).
        error_if_nonfinite: raise :class:`NonFiniteNormError` when the total norm is NaN or
            infinite (otherwise the gradients are scaled by a NaN or zero factor, as in PyTorch).

    Returns:
        The total norm of the gradients before clipping, as a 0-d Tensor.

    Example:
        >>> import pullback, pullback.optim
        >>> w = pullback.tensor([3.0, 4.0], requires_grad=True)
        >>> (w * w).sum().backward()                      # grad = [6, 8], norm 10
        >>> pullback.optim.clip_grad_norm_([w], max_norm=1.0)
        tensor(10.)
        >>> w.grad
        tensor([0.6, 0.8])
    """
    norm_type = float(norm_type)
    if not norm_type > 0:
        raise HyperparameterError(f"clip_grad_norm_: norm_type must be > 0, got {norm_type!r}")
    grads = _grads(parameters, "clip_grad_norm_")
    if not grads:
        return tensor(0.0)
    xp = grads[0].device.backend.xp
    norms = xp.stack([xp.linalg.norm(g.array.reshape(-1), norm_type) for g in grads])
    total = xp.linalg.norm(norms, norm_type)
    total_value = float(total)
    if error_if_nonfinite and not math.isfinite(total_value):
        raise NonFiniteNormError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is "
            f"{total_value}, so they cannot be clipped; pass error_if_nonfinite=False to clip "
            "anyway"
        )
    coef = float(max_norm) / (total_value + 1e-6)
    if not coef >= 1.0:  # scaling by 1.0 would change nothing; NaN still propagates
        for g in grads:
            xp.multiply(g.array, coef, out=g.array)
            mark_modified(g)
    return tensor(total, device=grads[0].device)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamp every gradient in place to ``[-clip_value, clip_value]``
    (``torch.nn.utils.clip_grad_value_``).

    Args:
        parameters: a Tensor or an iterable of Tensors whose ``.grad`` to clip.
        clip_value: the largest absolute value allowed (>= 0).
    """
    clip_value = float(clip_value)
    if not clip_value >= 0:
        raise HyperparameterError(
            f"clip_grad_value_: clip_value must be >= 0, got {clip_value!r}"
        )
    for g in _grads(parameters, "clip_grad_value_"):
        g.device.backend.xp.clip(g.array, -clip_value, clip_value, out=g.array)
        mark_modified(g)
