"""Adam and AdamW: adaptive moment estimation, with L2 or decoupled weight decay and AMSGrad."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pullback import Tensor, zeros_like

from ._kernels import add_ratio_, effective_grad, ema_square_, lerp_
from ._native import adam
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_betas, require_non_negative

__all__ = ["Adam", "AdamW"]


def decay_weights_(xp: Any, param: Any, group: dict[str, Any]) -> float:
    """Decoupled weight decay ``p *= 1 - lr * weight_decay`` when the group asks for it.

    Returns the weight decay left to add to the gradient (PyTorch's coupled L2): ``0.0`` when
    the decay was decoupled.
    """
    weight_decay = group["weight_decay"]
    if weight_decay == 0 or not group["decoupled_weight_decay"]:
        return weight_decay
    xp.multiply(param, 1.0 - group["lr"] * weight_decay, out=param)
    return 0.0


def moments_(xp: Any, p: Tensor, grad: Any, state: dict[str, Any], group: dict[str, Any],
             scratch: tuple[Any, Any]) -> Any:
    """The steps every Adam-like optimizer shares: count the step, decay the weights, then
    update ``exp_avg`` and ``exp_avg_sq`` with the effective gradient, which is returned
    (``grad`` itself, or ``scratch[0]`` holding it)."""
    s1, s2 = scratch
    state["step"] += 1
    beta1, beta2 = group["betas"]
    l2 = decay_weights_(xp, p.array, group)
    g = effective_grad(xp, grad, p.array, l2, group["maximize"], s1)
    lerp_(xp, state["exp_avg"].array, g, 1.0 - beta1, s2)
    ema_square_(xp, state["exp_avg_sq"].array, g, beta2, s2)
    return g


def moment_state(p: Tensor) -> dict[str, Any]:
    """Step 0 and zero first and second moments."""
    return {"step": 0, "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}


@OPTIMIZERS.register("adam")
class Adam(Optimizer):
    """Adam (``torch.optim.Adam``'s update rule and defaults).

    With ``g`` the gradient (negated when ``maximize``; plus ``weight_decay * p`` unless the
    decay is decoupled, in which case ``p *= 1 - lr * weight_decay`` first) and ``t`` the step::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        v_max = max(v_max, v)                     (amsgrad; v_max replaces v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v / (1 - beta2**t)) + eps)

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moment averages, each in [0, 1).
        eps: added to the denominator for numerical stability.
        weight_decay: weight decay (L2 penalty, or decoupled: see above).
        amsgrad: use the running maximum of the second moment (AMSGrad).
        maximize: maximize the objective instead of minimizing it.
        decoupled_weight_decay: decay the weights directly, as AdamW does.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *, maximize: bool = False,
                 decoupled_weight_decay: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
            "amsgrad": amsgrad, "maximize": maximize,
            "decoupled_weight_decay": decoupled_weight_decay,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "eps", "weight_decay")
        require_betas(group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state = moment_state(param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(param)
        return state

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        if p.device.type == "cuda" and _fused_cuda_step(p, grad, state, group):
            return
        if xp is np and _fused_cpu_step(p, grad, state, group):
            return
        moments_(xp, p, grad, state, group, scratch)
        _, denom = scratch
        beta1, beta2 = group["betas"]
        step = state["step"]
        step_size = group["lr"] / (1.0 - beta1**step)
        second = state["exp_avg_sq"].array
        if group["amsgrad"]:
            second = xp.maximum(state["max_exp_avg_sq"].array, second,
                                out=state["max_exp_avg_sq"].array)
        xp.sqrt(second, out=denom)
        xp.divide(denom, math.sqrt(1.0 - beta2**step), out=denom)
        xp.add(denom, group["eps"], out=denom)
        add_ratio_(xp, p.array, state["exp_avg"].array, denom, -step_size, denom)


def _fused_cpu_step(p: Tensor, grad: Any, state: dict[str, Any], group: dict[str, Any]) -> bool:
    """The whole update in one C pass (pullback.optim._native.adam) when it applies: float32
    arrays, no AMSGrad, not maximizing. It follows the passes of :meth:`Adam._update` operation
    for operation, so both paths give the same bits."""
    if group["amsgrad"] or group["maximize"]:
        return False
    beta1, beta2 = group["betas"]
    step = state["step"] + 1
    weight_decay = group["weight_decay"]
    decoupled = weight_decay != 0 and group["decoupled_weight_decay"]
    coupled = weight_decay != 0 and not group["decoupled_weight_decay"]
    done = adam(p.array, grad, state["exp_avg"].array, state["exp_avg_sq"].array,
                decay=1.0 - group["lr"] * weight_decay if decoupled else None,
                l2=weight_decay if coupled else None, one_minus_beta1=1.0 - beta1,
                one_minus_beta2=1.0 - beta2, bias2_sqrt=math.sqrt(1.0 - beta2**step),
                eps=group["eps"], neg_step_size=-(group["lr"] / (1.0 - beta1**step)))
    if done:
        state["step"] = step
    return done


def _fused_cuda_step(p: Tensor, grad: Any, state: dict[str, Any], group: dict[str, Any]) -> bool:
    """The whole update in one CUDA kernel (pullback-cuda's fused Adam/AdamW) when it applies.

    pullback-cuda is installed whenever a parameter lives on ``cuda``; it follows this module's
    arithmetic operation for operation, so both paths give the same numbers.
    """
    from pullback.cuda import fused_adamw_, fused_adamw_supported

    vmax = state.get("max_exp_avg_sq")
    if not fused_adamw_supported(p, grad, state["exp_avg"], state["exp_avg_sq"], vmax):
        return False
    state["step"] += 1
    beta1, beta2 = group["betas"]
    fused_adamw_(p, grad, state["exp_avg"], state["exp_avg_sq"], lr=group["lr"], beta1=beta1,
                 beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                 step=state["step"], maximize=group["maximize"], max_exp_avg_sq=vmax,
                 decoupled_weight_decay=group["decoupled_weight_decay"])
    return True


@OPTIMIZERS.register("adamw")
class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay (``torch.optim.AdamW``), ``p *= 1 - lr * wd``
    before the Adam step. The same arguments as :class:`Adam`, with ``weight_decay=1e-2``."""

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)
