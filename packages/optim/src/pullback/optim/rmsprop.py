"""RMSprop: divide the gradient by a running root mean square of recent gradients."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, zeros_like

from ._kernels import add_ratio_, add_scaled_, effective_grad, ema_square_, lerp_
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_non_negative


@OPTIMIZERS.register("rmsprop")
class RMSprop(Optimizer):
    """RMSprop (``torch.optim.RMSprop``'s update rule and defaults).

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``::

        v = alpha * v + (1 - alpha) * g**2
        a = alpha * a + (1 - alpha) * g           (centered)
        d = sqrt(v - a**2) + eps  if centered  else  sqrt(v) + eps
        b = momentum * b + g / d;  p = p - lr * b (momentum > 0)
        p = p - lr * g / d                        (otherwise)

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        alpha: smoothing constant of the running averages.
        eps: added to the denominator for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum factor.
        centered: normalize by an estimate of the gradient's variance instead of its second
            moment.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "alpha": alpha, "eps": eps, "weight_decay": weight_decay,
            "momentum": momentum, "centered": centered, "maximize": maximize,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "alpha", "eps", "weight_decay", "momentum")

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state: dict[str, Any] = {"step": 0, "square_avg": zeros_like(param)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = zeros_like(param)
        return state

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        s1, denom = scratch
        state["step"] += 1
        alpha = group["alpha"]
        g = effective_grad(xp, grad, p.array, group["weight_decay"], group["maximize"], s1)
        square_avg = state["square_avg"].array
        ema_square_(xp, square_avg, g, alpha, denom)
        if group["centered"]:
            grad_avg = state["grad_avg"].array
            lerp_(xp, grad_avg, g, 1.0 - alpha, denom)
            xp.multiply(grad_avg, grad_avg, out=denom)
            xp.subtract(square_avg, denom, out=denom)
            xp.sqrt(denom, out=denom)
        else:
            xp.sqrt(square_avg, out=denom)
        xp.add(denom, group["eps"], out=denom)
        if group["momentum"] > 0:
            buf = state["momentum_buffer"].array
            xp.multiply(buf, group["momentum"], out=buf)
            add_ratio_(xp, buf, g, denom, 1.0, denom)
            add_scaled_(xp, p.array, buf, -group["lr"], denom)
        else:
            add_ratio_(xp, p.array, g, denom, -group["lr"], denom)
