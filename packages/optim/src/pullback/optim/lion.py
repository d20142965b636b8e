"""Lion: evolved sign momentum (Chen et al., 2023, "Symbolic Discovery of Optimization
Algorithms")."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, zeros_like

from ._kernels import add_scaled_, effective_grad, lerp_
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_betas, require_non_negative


@OPTIMIZERS.register("lion")
class Lion(Optimizer):
    """Lion, as in the paper (and the ``lion-pytorch`` package it is tested against; PyTorch
    has no Lion).

    With ``g`` the gradient (negated when ``maximize``)::

        p = p * (1 - lr * weight_decay)
        p = p - lr * sign(beta1 * m + (1 - beta1) * g)
        m = beta2 * m + (1 - beta2) * g

    Use a learning rate 3-10x smaller than AdamW's and a weight decay 3-10x larger (the
    paper's advice): the sign makes every coordinate's step as large as ``lr``.

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        betas: the interpolation factor of the update and the decay of the momentum, each
            in [0, 1).
        weight_decay: decoupled weight decay.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-4,
                 betas: tuple[float, float] = (0.9, 0.99), weight_decay: float = 0.0, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "weight_decay": weight_decay,
            "maximize": maximize,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "weight_decay")
        require_betas(group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"exp_avg": zeros_like(param)}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        s1, s2 = scratch
        param, exp_avg = p.array, state["exp_avg"].array
        beta1, beta2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        if weight_decay != 0:
            xp.multiply(param, 1.0 - lr * weight_decay, out=param)
        g = effective_grad(xp, grad, param, 0.0, group["maximize"], s1)
        # the direction: sign(beta1 * m + (1 - beta1) * g), interpolated in s2
        xp.subtract(g, exp_avg, out=s2)
        xp.multiply(s2, 1.0 - beta1, out=s2)
        xp.add(s2, exp_avg, out=s2)
        xp.sign(s2, out=s2)
        add_scaled_(xp, param, s2, -lr, s2)
        lerp_(xp, exp_avg, g, 1.0 - beta2, s2)
