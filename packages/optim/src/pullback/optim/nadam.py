"""NAdam: Adam with Nesterov momentum and a momentum schedule."""

from __future__ import annotations

from typing import Any

from pullback import Tensor

from ._kernels import add_ratio_
from .adam import moment_state, moments_
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_betas, require_non_negative

@OPTIMIZERS.register("nadam")
class NAdam(Optimizer):
    """NAdam (``torch.optim.NAdam``'s update rule and defaults).

    With ``g``, ``m`` and ``v`` as in :class:`~pullback.optim.Adam`, step ``t``, the momentum
    schedule ``mu_t = beta1 * (1 - 0.5 * 0.96**(t * momentum_decay))`` and ``P_t`` the product
    ``mu_1 ... mu_t``::

        d = sqrt(v / (1 - beta2**t)) + eps
        p = p - lr * (1 - mu_t) / (1 - P_t) * g / d - lr * mu_{t+1} / (1 - P_{t+1}) * m / d

    ``P_t`` is kept as a Python float (float64) in the state ``mu_product``; PyTorch keeps a
    tensor of the default dtype (float32 unless changed), so its values drift from these by
    float32 rounding.

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moment averages, each in [0, 1).
        eps: added to the denominator for numerical stability.
        weight_decay: weight decay (L2 penalty, or decoupled as in AdamW).
        momentum_decay: the momentum schedule's decay rate.
        decoupled_weight_decay: decay the weights directly (``p *= 1 - lr * wd``).
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, maximize: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "eps", "weight_decay", "momentum_decay")
        require_betas(group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {**moment_state(param), "mu_product": 1.0}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        g = moments_(xp, p, grad, state, group, scratch)
        s1, denom = scratch
        beta1, beta2 = group["betas"]
        step, lr, decay = state["step"], group["lr"], group["momentum_decay"]
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        mu_product = state["mu_product"] = state["mu_product"] * mu
        xp.divide(state["exp_avg_sq"].array, 1.0 - beta2**step, out=denom)
        xp.sqrt(denom, out=denom)
        xp.add(denom, group["eps"], out=denom)
        add_ratio_(xp, p.array, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product), s1)
        add_ratio_(xp, p.array, state["exp_avg"].array, denom,
                   -lr * mu_next / (1.0 - mu_product * mu_next), s1)
