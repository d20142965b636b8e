"""``spanda.spike``: the Heaviside step forward, a surrogate's derivative backward.

``spike(u, threshold)`` is ``1`` where ``u > threshold`` and ``0`` elsewhere (snnTorch's
convention: a membrane exactly at the threshold does not fire). Threshold is an input, not an
attribute, so that a learnable threshold gets its gradient (``-g * surrogate'``) from the same
node: one node per spike tensor instead of a subtraction and a step.
"""

from __future__ import annotations

from typing import Any

from pullback.registry import Op


def _spike_kernel(xp: Any) -> Any:
    def spike(u: Any, threshold: Any, surrogate: Any) -> Any:
        return xp.greater(u, threshold).astype(u.dtype)

    return spike


SPIKE = Op("spanda.spike", _spike_kernel,
           doc="H(u - threshold) forward, the surrogate's derivative backward")


@SPIKE.def_grad
def _spike_grad(F: Any, g: Any, out: Any, u: Any, threshold: Any, surrogate: Any,
                needs: Any) -> Any:
    grad_u = g * surrogate.derivative(F, u - threshold)
    return (grad_u, -grad_u if needs[1] else None)
