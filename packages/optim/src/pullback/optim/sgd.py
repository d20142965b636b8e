"""Stochastic gradient descent, with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any

from pullback import Tensor, empty_like

from ._kernels import add_scaled_, effective_grad
from .errors import HyperparameterError
from .optimizer import OPTIMIZERS, Optimizer, ParamsT, require_non_negative


@OPTIMIZERS.register("sgd")
class SGD(Optimizer):
    """Stochastic gradient descent (``torch.optim.SGD``'s update rule and defaults).

    With ``g`` the gradient (negated when ``maximize``) plus ``weight_decay * p``::

        b = g                                     on the first step
        b = momentum * b + (1 - dampening) * g    after it        (when momentum != 0)
        d = g + momentum * b  if nesterov  else  b
        p = p - lr * d

    Args:
        params: Tensors or param group dicts.
        lr: learning rate.
        momentum: momentum factor.
        dampening: dampening of the momentum.
        weight_decay: L2 penalty added to the gradient.
        nesterov: Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``).
        maximize: maximize the objective instead of minimizing it.

    Example:
        >>> import pullback, pullback.optim
        >>> w = pullback.tensor([1.0, -2.0], requires_grad=True)
        >>> opt = pullback.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w
        tensor([ 0.8, -1.6], requires_grad=True)
    """

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, {
            "lr": lr, "momentum": momentum, "dampening": dampening,
            "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
        })

    def _check_group(self, group: dict[str, Any]) -> None:
        require_non_negative(group, "lr", "momentum", "weight_decay")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise HyperparameterError(
                "Nesterov momentum needs momentum > 0 and dampening == 0, got momentum="
                f"{group['momentum']!r}, dampening={group['dampening']!r}"
            )

    def _update(self, xp: Any, p: Tensor, grad: Any, state: dict[str, Any],
                group: dict[str, Any], scratch: tuple[Any, Any]) -> None:
        param = p.array
        s1, s2 = scratch
        momentum = group["momentum"]
        d = effective_grad(xp, grad, param, group["weight_decay"], group["maximize"], s1)
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:  # PyTorch's first step: the buffer is a copy of the gradient
                state["momentum_buffer"] = empty_like(p)
                buf = state["momentum_buffer"].array
                xp.copyto(buf, d)
            else:
                buf = buf.array
                xp.multiply(buf, momentum, out=buf)
                add_scaled_(xp, buf, d, 1.0 - group["dampening"], s2)
            if group["nesterov"]:
                xp.multiply(buf, momentum, out=s2)
                d = xp.add(d, s2, out=s2)
            else:
                d = buf
        add_scaled_(xp, param, d, -group["lr"], s2)
