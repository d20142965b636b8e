"""RAdam: Adam with the variance of the adaptive learning rate rectified."""

from __future__ import annotations

import math
from typing import Any

from pullback import Tensor

from ._kernels import add_ratio_, add_scaled_
from .adam import moment_state, moments_
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_betas, require_non_negative


@OPTIMIZERS.register("radam")
class RAdam(Optimizer):
    """RAdam (``torch.optim.RAdam``'s update rule and defaults).

    With ``m`` and ``v`` as in :class:`~pullback.optim.Adam`, step ``t``,
    ``rho_inf = 2 / (1 - beta2) - 1`` and ``rho_t = rho_inf - 2 t beta2**t / (1 - beta2**t)``::

        p = p - lr * m / (1 - beta1**t) * r_t * sqrt(1 - beta2**t) / (sqrt(v) + eps)
                                                                   when rho_t > 5
        p = p - lr * m / (1 - beta1**t)                            otherwise

    where ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``.

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moment averages, each in [0, 1).
        eps: added to the denominator for numerical stability.
        weight_decay: weight decay (L2 penalty, or decoupled as in AdamW).
        decoupled_weight_decay: decay the weights directly (``p *= 1 - lr * wd``).
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "eps", "weight_decay")
        require_betas(group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return moment_state(param)

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        moments_(xp, p, grad, state, group, scratch)
        _, s2 = scratch
        beta1, beta2 = group["betas"]
        step = state["step"]
        bias_correction1 = 1.0 - beta1**step
        bias_correction2 = 1.0 - beta2**step
        rho_inf = 2.0 / (1.0 - beta2) - 1.0
        rho_t = rho_inf - 2.0 * step * beta2**step / bias_correction2
        step_size = group["lr"] / bias_correction1
        exp_avg = state["exp_avg"].array
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                             / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            xp.sqrt(state["exp_avg_sq"].array, out=s2)
            xp.add(s2, group["eps"], out=s2)
            add_ratio_(xp, p.array, exp_avg, s2, -step_size * rect * math.sqrt(bias_correction2),
                       s2)
        else:
            add_scaled_(xp, p.array, exp_avg, -step_size, s2)
