"""SparseAdam: Adam that updates only the entries a gradient touches (lazy Adam, for
embedding tables)."""

from __future__ import annotations

import math
from typing import Any

from pullback import Tensor, zeros_like

from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_betas, require_non_negative


@OPTIMIZERS.register("sparse_adam")
class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``'s update rule and defaults, on dense gradients: the entries
    it touches are those where the gradient is nonzero (what ``grad.to_sparse()`` keeps).

    pullback's gradients are dense; an embedding lookup's gradient is zero on the rows it did
    not use, so those rows, and their moments, stay as they are, as with PyTorch's sparse
    gradients. With ``g`` the nonzero entries of the gradient (negated when ``maximize``) and
    ``t`` the step::

        m[g] = beta1 * m[g] + (1 - beta1) * g;  v[g] = beta2 * v[g] + (1 - beta2) * g**2
        p[g] = p[g] - lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m[g] / (sqrt(v[g]) + eps)

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        betas: decay rates of the first and second moments, each in [0, 1).
        eps: added to the denominator for numerical stability.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps,
                                  "maximize": maximize})

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "eps")
        require_betas(group)

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "exp_avg": zeros_like(param), "exp_avg_sq": zeros_like(param)}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        state["step"] += 1
        touched = xp.nonzero(grad)  # the coordinates a sparse gradient would hold
        values = grad[touched]
        if values.size == 0:
            return
        if group["maximize"]:
            values = -values
        beta1, beta2 = group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"].array, state["exp_avg_sq"].array
        # PyTorch's form: old += (1 - b) * (new - old), on the touched entries only.
        old_avg, old_sq = exp_avg[touched], exp_avg_sq[touched]
        avg_update = (values - old_avg) * (1 - beta1)
        sq_update = (values * values - old_sq) * (1 - beta2)
        exp_avg[touched] += avg_update
        exp_avg_sq[touched] += sq_update
        numerator = avg_update + old_avg
        denominator = xp.sqrt(sq_update + old_sq) + group["eps"]
        step = state["step"]
        step_size = group["lr"] * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        p.array[touched] += -step_size * (numerator / denominator)
