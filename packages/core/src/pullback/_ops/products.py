"""Products under PyTorch's names: mm, bmm, mv, the fused ``add*`` forms (addmm, addmv,
baddbmm, addcmul, addcdiv), kron, tensordot, inner and cross.

All are compositions of matmul, reshape and elementwise ops, so their gradients (of every order)
and pullback.func's rules come from those ops. Each checks the ranks PyTorch requires and names
itself in the error: ``mm`` on a batch is a ShapeError, not a silent broadcast.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._autocast_policy import autocast_function
from ..errors import ArgumentError, ShapeError
from ._axes import normalize_axes


def _shapes(*xs: Any) -> str:
    return " and ".join(str(tuple(x.shape)) for x in xs)


def _need_ndim(name: str, x: Any, y: Any, nx: int, ny: int) -> None:
    if x.ndim != nx or y.ndim != ny:
        raise ShapeError(f"{name}: expected {nx}-D and {ny}-D tensors, got {_shapes(x, y)}")


def mm(x: Any, y: Any) -> Any:
    """Product of two matrices, ``(n, m) @ (m, p)``."""
    from .linalg import matmul

    _need_ndim("mm", x, y, 2, 2)
    return matmul(x, y)


def bmm(x: Any, y: Any) -> Any:
    """Batched product ``(b, n, m) @ (b, m, p)`` (no broadcasting of the batch, as PyTorch)."""
    from .linalg import matmul

    _need_ndim("bmm", x, y, 3, 3)
    if x.shape[0] != y.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ, got {_shapes(x, y)}")
    return matmul(x, y)


def mv(x: Any, v: Any) -> Any:
    """Matrix-vector product ``(n, m) @ (m,)``."""
    from .linalg import matmul

    _need_ndim("mv", x, v, 2, 1)
    return matmul(x, v)


def _scaled_sum(input: Any, product: Any, beta: float, alpha: float) -> Any:  # noqa: A002
    """``beta * input + alpha * product``; with ``beta == 0`` the input is ignored (NaN in it
    does not propagate), as in PyTorch."""
    from .elementwise import add, mul

    if alpha != 1:
        product = mul(product, alpha)
    if beta == 0:
        return _broadcast_like(product, input)
    return add(input if beta == 1 else mul(input, beta), product)


def _broadcast_like(product: Any, input: Any) -> Any:
    from .shape import broadcast_to

    shape = _broadcast_shape(tuple(input.shape), tuple(product.shape))
    return broadcast_to(product, shape) if tuple(product.shape) != shape else product


def _broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise ShapeError(f"shapes {a} and {b} do not broadcast") from None


@autocast_function("addmm")
def addmm(input: Any, mat1: Any, mat2: Any, *, beta: float = 1, alpha: float = 1) -> Any:  # noqa: A002
    """``beta * input + alpha * (mat1 @ mat2)`` (``input`` broadcast to the product)."""
    return _scaled_sum(input, mm(mat1, mat2), beta, alpha)


def addmv(input: Any, mat: Any, vec: Any, *, beta: float = 1, alpha: float = 1) -> Any:  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


@autocast_function("baddbmm")
def baddbmm(input: Any, batch1: Any, batch2: Any, *, beta: float = 1,  # noqa: A002
            alpha: float = 1) -> Any:
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return _scaled_sum(input, bmm(batch1, batch2), beta, alpha)


def addcmul(input: Any, tensor1: Any, tensor2: Any, *, value: float = 1) -> Any:  # noqa: A002
    """``input + value * tensor1 * tensor2`` (broadcast together)."""
    from .elementwise import add, mul

    prod = mul(tensor1, tensor2)
    return add(input, prod if value == 1 else mul(prod, value))


def addcdiv(input: Any, tensor1: Any, tensor2: Any, *, value: float = 1) -> Any:  # noqa: A002
    """``input + value * tensor1 / tensor2`` (broadcast together)."""
    from .elementwise import add, mul
    from .rounding import div

    quot = div(tensor1, tensor2)
    return add(input, quot if value == 1 else mul(quot, value))


def kron(x: Any, y: Any) -> Any:
    """Kronecker product: for ``x`` of shape ``(a0, a1, ...)`` and ``y`` of ``(b0, b1, ...)``
    (the shorter padded with leading 1s), shape ``(a0 b0, a1 b1, ...)``."""
    from .elementwise import mul
    from .shape import reshape

    n = max(x.ndim, y.ndim)
    xs = (1,) * (n - x.ndim) + tuple(x.shape)
    ys = (1,) * (n - y.ndim) + tuple(y.shape)
    # Interleave the axes: x as (a0, 1, a1, 1, ...), y as (1, b0, 1, b1, ...).
    xi = reshape(x, tuple(s for a in xs for s in (a, 1)))
    yi = reshape(y, tuple(s for b in ys for s in (1, b)))
    return reshape(mul(xi, yi), tuple(a * b for a, b in zip(xs, ys)))


def _dims_pair(x: Any, y: Any, dims: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if isinstance(dims, int):
        if dims < 0 or dims > min(x.ndim, y.ndim):
            raise ArgumentError(f"tensordot: dims={dims} must be in [0, "
                                f"{min(x.ndim, y.ndim)}] for shapes {_shapes(x, y)}")
        ax, ay = tuple(range(x.ndim - dims, x.ndim)), tuple(range(dims))
    else:
        try:
            dx, dy = dims
        except (TypeError, ValueError):
            raise ArgumentError(f"tensordot: dims must be an int or a pair of axis lists, got "
                                f"{dims!r}") from None
        dx = (dx,) if isinstance(dx, int) else tuple(dx)
        dy = (dy,) if isinstance(dy, int) else tuple(dy)
        if len(dx) != len(dy):
            raise ShapeError(f"tensordot: {len(dx)} axes of the first tensor against {len(dy)} "
                             f"of the second ({dims!r})")
        ax = tuple(normalize_axes(a, x.ndim, "tensordot")[0] for a in dx)
        ay = tuple(normalize_axes(a, y.ndim, "tensordot")[0] for a in dy)
    for a, b in zip(ax, ay):
        if x.shape[a] != y.shape[b]:
            raise ShapeError(f"tensordot: contracted sizes differ: axis {a} of "
                             f"{tuple(x.shape)} against axis {b} of {tuple(y.shape)}")
    return ax, ay


def tensordot(x: Any, y: Any, dims: Any = 2) -> Any:
    """Sum of products over ``dims``: the last ``dims`` axes of ``x`` with the first of ``y``,
    or the axis lists ``dims = (axes_x, axes_y)``."""
    from .linalg import matmul
    from .shape import permute, reshape

    ax, ay = _dims_pair(x, y, dims)
    free_x = [a for a in range(x.ndim) if a not in ax]
    free_y = [a for a in range(y.ndim) if a not in ay]
    k = _prod(x.shape[a] for a in ax)
    m = _prod(x.shape[a] for a in free_x)
    n = _prod(y.shape[a] for a in free_y)
    xm = reshape(permute(x, (*free_x, *ax)), (m, k))
    ym = reshape(permute(y, (*ay, *free_y)), (k, n))
    shape = tuple(x.shape[a] for a in free_x) + tuple(y.shape[a] for a in free_y)
    return reshape(matmul(xm, ym), shape)


def _prod(sizes: Any) -> int:
    out = 1
    for s in sizes:
        out *= s
    return out


def inner(x: Any, y: Any) -> Any:
    """Sum of products over the last axes (a product when either is 0-d)."""
    from .elementwise import mul

    if x.ndim == 0 or y.ndim == 0:
        return mul(x, y)
    return tensordot(x, y, dims=((x.ndim - 1,), (y.ndim - 1,)))


def cross(x: Any, y: Any, dim: int | None = None) -> Any:
    """Cross product of 3-vectors along ``dim`` (broadcast together). Without ``dim``, the
    first axis of size 3, as ``torch.cross`` (``pullback.linalg.cross`` defaults to -1)."""
    from .elementwise import mul, sub
    from .index import getitem
    from .shape import broadcast_to, stack

    shape = _broadcast_shape(tuple(x.shape), tuple(y.shape))
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise ShapeError(f"cross: no dimension of size 3 in shapes {_shapes(x, y)}")
    d = normalize_axes(dim, len(shape), "cross")[0]
    if shape[d] != 3:
        raise ShapeError(f"cross: dimension {dim} must have size 3, got shapes {_shapes(x, y)}")
    if tuple(x.shape) != shape:
        x = broadcast_to(x, shape)
    if tuple(y.shape) != shape:
        y = broadcast_to(y, shape)

    def part(t: Any, i: int) -> Any:
        return getitem(t, (slice(None),) * d + (i,))

    comps = [sub(mul(part(x, (i + 1) % 3), part(y, (i + 2) % 3)),
                 mul(part(x, (i + 2) % 3), part(y, (i + 1) % 3))) for i in range(3)]
    return stack(comps, axis=d)


METHODS = ("mm", "bmm", "mv", "addmm", "addmv", "baddbmm", "addcmul", "addcdiv", "kron",
           "inner", "cross")
__all__ = ["addcdiv", "addcmul", "addmm", "addmv", "baddbmm", "bmm", "cross", "inner", "kron",
           "mm", "mv", "tensordot"]
