"""Adadelta: steps scaled by the ratio of running RMS of updates and of gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback import Tensor, zeros_like

from ._kernels import add_scaled_, effective_grad
from ._native import adadelta
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_non_negative


def _ema_square(xp: Any, avg: Any, values: Any, rho: float, scratch: Any) -> None:
    """``avg = rho * avg + (1 - rho) * values**2``, in PyTorch's order
    (``avg.mul_(rho).addcmul_(values, values, value=1 - rho)``)."""
    xp.multiply(values, values, out=scratch)
    xp.multiply(scratch, 1.0 - rho, out=scratch)
    xp.multiply(avg, rho, out=avg)
    xp.add(avg, scratch, out=avg)


@OPTIMIZERS.register("adadelta")
class Adadelta(Optimizer):
    """Adadelta (``torch.optim.Adadelta``'s update rule and defaults; Zeiler, 2012).

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``::

        v = rho * v + (1 - rho) * g**2
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta**2
        p = p - lr * delta

    Args:
        params: Tensors or param group dicts.
        lr: scale of the update (1.0 is the paper's rule).
        rho: decay rate of the running averages, in [0, 1].
        eps: added inside both square roots.
        weight_decay: L2 penalty added to the gradient.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, *, maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "rho": rho, "eps": eps,
                                  "weight_decay": weight_decay, "maximize": maximize})

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "rho", "eps", "weight_decay")
        if group["rho"] > 1.0:
            from .errors import HyperparameterError

            raise HyperparameterError(f"invalid rho: {group['rho']!r} (it must be in [0, 1])")

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "square_avg": zeros_like(param), "acc_delta": zeros_like(param)}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        s1, s2 = scratch
        state["step"] += 1
        rho, eps = group["rho"], group["eps"]
        g = effective_grad(xp, grad, p.array, group["weight_decay"], group["maximize"], s1)
        square_avg, acc_delta = state["square_avg"].array, state["acc_delta"].array
        if xp is np and adadelta(p.array, g, square_avg, acc_delta, rho, eps, group["lr"]):
            return  # the passes below in one C pass, the same bits
        _ema_square(xp, square_avg, g, rho, s2)
        xp.add(square_avg, eps, out=s2)
        xp.sqrt(s2, out=s2)  # the RMS of the gradients
        xp.divide(g, s2, out=s2)  # g is free after this: s1 takes the RMS of the updates
        xp.add(acc_delta, eps, out=s1)
        xp.sqrt(s1, out=s1)
        xp.multiply(s2, s1, out=s2)  # delta
        _ema_square(xp, acc_delta, s2, rho, s1)
        add_scaled_(xp, p.array, s2, -group["lr"], s2)
