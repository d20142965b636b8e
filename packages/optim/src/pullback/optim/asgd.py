"""ASGD: SGD with a decaying step and a running average of the iterates (Polyak-Ruppert)."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, zeros_like

from ._kernels import add_scaled_, effective_grad, lerp_
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_non_negative


@OPTIMIZERS.register("asgd")
class ASGD(Optimizer):
    """Averaged SGD (``torch.optim.ASGD``'s update rule and defaults).

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``, ``t`` the
    step, ``eta`` starting at ``lr`` and ``mu`` at 1::

        p = p * (1 - lambd * eta) - eta * g
        ax = ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * t)**alpha;  mu = 1 / max(1, t - t0)

    ``state[p]["ax"]`` is the averaged parameter (copy it into the model to evaluate it).

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        lambd: decay term of the step and of the weights.
        alpha: power of the step's decay.
        t0: the step at which averaging starts.
        weight_decay: L2 penalty added to the gradient.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0.0, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                                  "weight_decay": weight_decay, "maximize": maximize})

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "lambd", "alpha", "t0", "weight_decay")

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "eta": float(group["lr"]), "mu": 1.0, "ax": zeros_like(param)}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        s1, s2 = scratch
        state["step"] += 1
        lr, lambd, eta = group["lr"], group["lambd"], state["eta"]
        g = effective_grad(xp, grad, p.array, group["weight_decay"], group["maximize"], s1)
        xp.multiply(p.array, 1.0 - lambd * eta, out=p.array)
        add_scaled_(xp, p.array, g, -eta, s2)
        ax = state["ax"].array
        if state["mu"] != 1:
            lerp_(xp, ax, p.array, state["mu"], s2)
        else:
            xp.copyto(ax, p.array)
        step = state["step"]
        state["eta"] = lr / ((1 + lambd * lr * step) ** group["alpha"])
        state["mu"] = 1 / max(1, step - group["t0"])
