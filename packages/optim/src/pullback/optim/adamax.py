"""Adamax: Adam with the infinity norm in place of the second moment."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, zeros_like

from ._kernels import add_ratio_, effective_grad, lerp_
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_betas, require_non_negative


@OPTIMIZERS.register("adamax")
class Adamax(Optimizer):
    """Adamax (``torch.optim.Adamax``'s update rule and defaults).

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p`` and ``t``
    the step::

        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1**t) * m / u

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the first moment and of the infinity norm, each in [0, 1).
        eps: added to ``|g|`` for numerical stability.
        weight_decay: L2 penalty added to the gradient.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, *, maximize: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "maximize": maximize,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "eps", "weight_decay")
        require_betas(group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "exp_avg": zeros_like(param), "exp_inf": zeros_like(param)}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        s1, s2 = scratch
        state["step"] += 1
        beta1, beta2 = group["betas"]
        g = effective_grad(xp, grad, p.array, group["weight_decay"], group["maximize"], s1)
        exp_avg, exp_inf = state["exp_avg"].array, state["exp_inf"].array
        lerp_(xp, exp_avg, g, 1.0 - beta1, s2)
        xp.multiply(exp_inf, beta2, out=exp_inf)
        xp.abs(g, out=s2)
        xp.add(s2, group["eps"], out=s2)
        xp.maximum(exp_inf, s2, out=exp_inf)
        step_size = group["lr"] / (1.0 - beta1 ** state["step"])
        add_ratio_(xp, p.array, exp_avg, exp_inf, -step_size, s2)
