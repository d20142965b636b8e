"""In-place array updates shared by the optimizers.

Each helper runs a few ufuncs with ``out=`` on backend arrays (NumPy, CuPy: anything with
NumPy's ufunc API, passed as ``xp``), writing into its first argument or into a scratch array
the caller lends, so that an optimizer step allocates nothing. They never write into the
gradient: ``p.grad`` belongs to the user.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._native import add_scaled

Array = Any


def effective_grad(xp: Any, grad: Array, param: Array, weight_decay: float, maximize: bool,
                   out: Array) -> Array:
    """``±grad + weight_decay * param`` (PyTorch's coupled L2 decay; minus for ``maximize``).

    Returns ``grad`` itself when there is nothing to add, else ``out`` holding the result.
    """
    if weight_decay == 0:
        return xp.negative(grad, out=out) if maximize else grad
    xp.multiply(param, weight_decay, out=out)
    return xp.subtract(out, grad, out=out) if maximize else xp.add(out, grad, out=out)


def lerp_(xp: Any, avg: Array, target: Array, weight: float, scratch: Array) -> None:
    """``avg += weight * (target - avg)``: the exponential moving average step."""
    xp.subtract(target, avg, out=scratch)
    xp.multiply(scratch, weight, out=scratch)
    xp.add(avg, scratch, out=avg)


def ema_square_(xp: Any, avg_sq: Array, grad: Array, beta: float, scratch: Array) -> None:
    """``avg_sq = beta * avg_sq + (1 - beta) * grad**2``."""
    xp.multiply(grad, grad, out=scratch)
    lerp_(xp, avg_sq, scratch, 1.0 - beta, scratch)


def add_scaled_(xp: Any, target: Array, source: Array, alpha: float, scratch: Array) -> None:
    """``target += alpha * source`` (``scratch`` may be ``source`` itself)."""
    if alpha == 1.0:  # SGD without dampening, RMSprop's momentum: one pass, not two
        xp.add(target, source, out=target)
        return
    if xp is np and add_scaled(target, source, alpha):  # one C pass, the same bits
        return
    xp.multiply(source, alpha, out=scratch)
    xp.add(target, scratch, out=target)


def add_ratio_(xp: Any, target: Array, numerator: Array, denominator: Array, alpha: float,
               scratch: Array) -> None:
    """``target += alpha * numerator / denominator`` (``scratch`` may alias either operand)."""
    xp.divide(numerator, denominator, out=scratch)
    add_scaled_(xp, target, scratch, alpha, scratch)
