"""Jacobians, Hessians and Hessian-vector products, built on :func:`pullback.autograd.grad`."""

from __future__ import annotations

from typing import Callable

from ..tensor import Tensor
from .api import grad


def _prepare(x: Tensor) -> Tensor:
    return x.detach().requires_grad_(True)


def jacobian(fn: Callable[[Tensor], Tensor], x: Tensor, create_graph: bool = False) -> Tensor:
    """d fn(x) / d x, with shape ``fn(x).shape + x.shape`` (one backward per output element)."""
    from .._ops import reshape, stack
    from ..creation import zeros

    x = _prepare(x) if not create_graph else x
    y = fn(x)
    flat = reshape(y, (-1,))
    rows = []
    for i in range(flat.shape[0]):
        (g,) = grad(flat[i], x, retain_graph=True, create_graph=create_graph, allow_unused=True)
        rows.append(g if g is not None else zeros(x.shape, dtype=x.dtype, device=x.device))
    if not rows:
        return zeros(tuple(y.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
    return reshape(stack(rows), tuple(y.shape) + tuple(x.shape))


def hessian(fn: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """Second derivatives of a scalar ``fn`` at ``x``: shape ``x.shape + x.shape``."""
    x = _prepare(x)

    def gradient(z: Tensor) -> Tensor:
        (g,) = grad(fn(z), z, create_graph=True)
        assert g is not None  # without allow_unused, grad raises instead of giving None
        return g

    return jacobian(gradient, x, create_graph=True).detach()


def hvp(fn: Callable[[Tensor], Tensor], x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """``(fn(x), H v)`` for a scalar ``fn``: double backward, never forms the Hessian."""
    x = _prepare(x)
    y = fn(x)
    (g,) = grad(y, x, create_graph=True)
    (hv,) = grad((g * v).sum(), x, allow_unused=True)
    if hv is None:
        from ..creation import zeros_like

        hv = zeros_like(x)
    return y.detach(), hv


def vjp(fn: Callable[[Tensor], Tensor], x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """``(fn(x), v^T J)``: one reverse pass (zeros for ``v^T J`` when ``fn(x)`` does not depend
    on ``x``, as ``torch.autograd.functional.vjp`` gives)."""
    x = _prepare(x)
    y = fn(x)
    g = grad(y, x, grad_outputs=v, allow_unused=True)[0] if y.requires_grad else None
    if g is None:
        from ..creation import zeros_like

        g = zeros_like(x)
    return y.detach(), g
