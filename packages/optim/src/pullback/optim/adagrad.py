"""Adagrad: per-coordinate learning rates from the sum of squared gradients."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, full_like

from ._kernels import add_ratio_, effective_grad
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_non_negative


@OPTIMIZERS.register("adagrad")
class Adagrad(Optimizer):
    """Adagrad (``torch.optim.Adagrad``'s update rule and defaults).

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p`` and ``t``
    the step::

        s = s + g**2                              (s starts at initial_accumulator_value)
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)

    The state of a parameter is made at its first step (PyTorch makes it in the constructor),
    from its group's ``initial_accumulator_value``.

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        lr_decay: learning rate decay per step.
        weight_decay: L2 penalty added to the gradient.
        initial_accumulator_value: the starting value of the sum of squares.
        eps: added to the denominator for numerical stability.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "lr_decay": lr_decay, "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value, "eps": eps,
            "maximize": maximize,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "lr_decay", "weight_decay",
                             "initial_accumulator_value", "eps")

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "sum": full_like(param, group["initial_accumulator_value"])}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        s1, s2 = scratch
        step = state["step"] = state["step"] + 1
        g = effective_grad(xp, grad, p.array, group["weight_decay"], group["maximize"], s1)
        total = state["sum"].array
        xp.multiply(g, g, out=s2)
        xp.add(total, s2, out=total)
        xp.sqrt(total, out=s2)
        xp.add(s2, group["eps"], out=s2)
        clr = group["lr"] / (1.0 + (step - 1) * group["lr_decay"])
        add_ratio_(xp, p.array, g, s2, -clr, s2)
