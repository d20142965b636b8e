"""Rprop: per-weight step sizes that grow while the gradient keeps its sign and shrink when it
flips; only the gradient's sign is used."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, full_like, zeros_like

from .errors import HyperparameterError
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_non_negative


@OPTIMIZERS.register("rprop")
class Rprop(Optimizer):
    """Resilient backpropagation (``torch.optim.Rprop``'s update rule and defaults, the
    variant that skips the step after a sign change).

    With ``g`` the gradient (negated when ``maximize``) and ``g_prev`` the last step's::

        s = clamp(s * (etaplus if g*g_prev > 0 else etaminus if g*g_prev < 0 else 1),
                  step_sizes[0], step_sizes[1])
        g = 0 where g*g_prev < 0
        p = p - sign(g) * s;  g_prev = g

    Args:
        params: Tensors or param group dicts.
        lr: the initial step size of every weight.
        etas: (etaminus, etaplus), the shrinking and growing factors,
            ``0 < etaminus < 1 < etaplus``.
        step_sizes: the smallest and largest step sizes.
        maximize: maximize the objective instead of minimizing it.
    """

    def __init__(self, params: ParamsT, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50.0), *,
                 maximize: bool = False) -> None:
        super().__init__(params, {"lr": lr, "etas": tuple(etas), "step_sizes": tuple(step_sizes),
                                  "maximize": maximize})

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr")
        etaminus, etaplus = group["etas"]
        if not 0.0 < etaminus < 1.0 < etaplus:
            raise HyperparameterError(f"invalid etas: {group['etas']!r} (they must satisfy "
                                      "0 < etaminus < 1 < etaplus)")
        low, high = group["step_sizes"]
        if not 0.0 <= low <= high:
            raise HyperparameterError(f"invalid step_sizes: {group['step_sizes']!r} (they must "
                                      "satisfy 0 <= min <= max)")

    def _init_state(self, param: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": 0, "prev": zeros_like(param),
                "step_size": full_like(param, group["lr"])}

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        s1, s2 = scratch
        state["step"] += 1
        etaminus, etaplus = group["etas"]
        prev, step_size = state["prev"].array, state["step_size"].array
        if group["maximize"]:
            xp.negative(grad, out=s1)
        else:
            xp.copyto(s1, grad)  # s1: this step's gradient, zeroed below where the sign flips
        xp.multiply(s1, prev, out=s2)
        grew, flipped = s2 > 0, s2 < 0
        s2.fill(1.0)
        s2[grew] = etaplus
        s2[flipped] = etaminus
        xp.multiply(step_size, s2, out=step_size)
        xp.clip(step_size, *group["step_sizes"], out=step_size)
        s1[flipped] = 0
        xp.copyto(prev, s1)
        xp.sign(s1, out=s2)
        xp.multiply(s2, step_size, out=s2)
        xp.subtract(p.array, s2, out=p.array)
