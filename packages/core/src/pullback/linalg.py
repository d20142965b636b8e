"""``pullback.linalg``: PyTorch's ``torch.linalg`` with gradients.

Norms, inverse, determinants, solve, Cholesky, QR, SVD, symmetric eigendecomposition,
pseudo-inverse, least squares, matrix exponential and powers, cross products. Every function
works on the last two axes and batches over the leading ones. The decompositions' grad rules
and their behaviour at repeated singular values or eigenvalues are described in
:mod:`pullback._ops.decompositions`.

Example::

    import pullback as pb

    a = pb.randn(3, 3, dtype=pb.float64, requires_grad=True)
    pb.linalg.slogdet(a).logabsdet.backward()   # a.grad is inv(a).mT
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from ._ops import decompositions as _d
from .dispatch import apply as _apply
from ._ops.decompositions import check_matrix as _check_matrix, check_square as _check_square
from .errors import ArgumentError, ShapeError

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
LstsqResult = namedtuple("LstsqResult", ["solution", "residuals", "rank", "singular_values"])


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
                dtype: Any = None) -> Any:
    """The vector ``ord``-norm over ``dim`` (all elements by default)."""
    from ._ops import norm

    if dtype is not None:
        x = x.to(dtype)
    return norm(x, ord, dim, keepdims=keepdim)


def matrix_norm(x: Any, ord: Any = "fro", dim: tuple[int, int] = (-2, -1),  # noqa: A002
                keepdim: bool = False) -> Any:
    """The matrix norm: "fro", "nuc", 2 / -2 (largest / smallest singular value), 1 / -1
    (max / min column sum of |x|), inf / -inf (row sums)."""
    from ._ops import amax, amin, movedim, norm, reshape, sum as sum_

    _check_matrix(x, "matrix_norm")
    if ord == "fro":
        return norm(x, 2, dim, keepdims=keepdim)
    m = movedim(x, tuple(dim), (-2, -1))
    if ord in ("nuc", 2, -2):
        s = svdvals(m)
        out = sum_(s, -1) if ord == "nuc" else (amax(s, -1) if ord == 2 else amin(s, -1))
    elif ord in (1, -1, math.inf, -math.inf):
        axis = -2 if ord in (1, -1) else -1
        sums = sum_(abs(m), axis)
        out = amax(sums, -1) if ord in (1, math.inf) else amin(sums, -1)
    else:
        raise ArgumentError(f"matrix_norm: ord must be 'fro', 'nuc', 2, -2, 1, -1, inf or -inf, "
                            f"got {ord!r}")
    if keepdim:
        shape = list(x.shape)
        for d in dim:
            shape[d % x.ndim] = 1
        out = reshape(out, tuple(shape))
    return out


def norm(x: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, *,  # noqa: A002
         dtype: Any = None) -> Any:
    """``vector_norm`` for one dim (or a flattened tensor), ``matrix_norm`` for two dims (or a
    matrix given a matrix ``ord``), as ``torch.linalg.norm``."""
    if dtype is not None:
        x = x.to(dtype)
    matrix = (isinstance(dim, (tuple, list)) and len(dim) == 2) or (
        dim is None and x.ndim == 2 and ord is not None)
    if matrix:
        return matrix_norm(x, "fro" if ord is None else ord, tuple(dim or (-2, -1)), keepdim)
    if ord is None:
        ord = 2  # noqa: A001
    return vector_norm(x, ord, dim, keepdim)


def inv(x: Any) -> Any:
    """The inverse of square matrices (a ShapeError naming the op for singular ones)."""
    _check_square(x, "inv")
    return _apply(_d.INV, x)


def det(x: Any) -> Any:
    """The determinant (its gradient assumes an invertible matrix)."""
    _check_square(x, "det")
    return _apply(_d.DET, x)


def slogdet(x: Any) -> Any:
    """``(sign, logabsdet)`` of the determinant."""
    _check_square(x, "slogdet")
    return SlogdetResult(_apply(_d.SLOGDET_SIGN, x), _apply(_d.LOGABSDET, x))


def solve(a: Any, b: Any, *, left: bool = True) -> Any:
    """The ``X`` with ``a @ X = b`` (``X @ a = b`` with ``left=False``); ``b`` may be a vector
    (or a stack of them)."""
    from ._ops import reshape, matrix_transpose

    _check_square(a, "solve")
    if not left:
        return matrix_transpose(solve(matrix_transpose(a), matrix_transpose(b)))
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    b2 = reshape(b, tuple(b.shape) + (1,)) if vector else b
    if b2.shape[-2] != a.shape[-1]:
        raise ShapeError(f"solve: a {tuple(a.shape)} and b {tuple(b.shape)} do not match")
    x = _apply(_d.SOLVE, a, b2)
    return reshape(x, tuple(x.shape[:-1])) if vector else x


def cholesky(x: Any, *, upper: bool = False) -> Any:
    """The Cholesky factor of symmetric positive-definite matrices (lower, or upper)."""
    from ._ops import matrix_transpose

    _check_square(x, "cholesky")
    low = _apply(_d.CHOLESKY, x)
    return matrix_transpose(low) if upper else low


def qr(x: Any, mode: str = "reduced") -> Any:
    """``(Q, R)`` of the reduced QR decomposition (gradients for m >= n)."""
    _check_matrix(x, "qr")
    if mode != "reduced":
        raise ArgumentError(f"qr: only mode='reduced' is supported, got {mode!r}")
    return QRResult(_apply(_d.QR, x, part="Q"), _apply(_d.QR, x, part="R"))


def svd(x: Any, full_matrices: bool = True) -> Any:
    """``(U, S, Vh)``; the reduced factors (``full_matrices=False``) are what has gradients,
    and square matrices are the same either way."""
    _check_matrix(x, "svd")
    if full_matrices and x.shape[-1] != x.shape[-2]:
        raise ArgumentError("svd: full_matrices=True is supported for square matrices only; "
                            "pass full_matrices=False")
    return SVDResult(*(_apply(_d.SVD, x, part=p) for p in ("U", "S", "Vh")))


def svdvals(x: Any) -> Any:
    """The singular values, descending (their gradient is defined everywhere)."""
    _check_matrix(x, "svdvals")
    return _apply(_d.SVD, x, part="S")


def eigh(x: Any, UPLO: str = "L") -> Any:  # noqa: N803 - PyTorch's name
    """``(eigenvalues, eigenvectors)`` of symmetric matrices, read from one triangle."""
    _check_square(x, "eigh")
    return EighResult(_apply(_d.EIGH, x, part="values", uplo=UPLO),
                      _apply(_d.EIGH, x, part="vectors", uplo=UPLO))


def eigvalsh(x: Any, UPLO: str = "L") -> Any:  # noqa: N803
    """The eigenvalues of symmetric matrices, ascending (gradient defined everywhere)."""
    _check_square(x, "eigvalsh")
    return _apply(_d.EIGH, x, part="values", uplo=UPLO)


def pinv(x: Any, *, hermitian: bool = False) -> Any:
    """The Moore-Penrose pseudo-inverse of full-rank matrices, ``(A^T A)^-1 A^T`` (tall) or
    ``A^T (A A^T)^-1`` (wide): smooth gradients without an SVD."""
    from ._ops import matmul, matrix_transpose

    _check_matrix(x, "pinv")
    xt = matrix_transpose(x)
    if x.shape[-2] >= x.shape[-1]:
        return matmul(inv(matmul(xt, x)), xt)
    return matmul(xt, inv(matmul(x, xt)))


def lstsq(a: Any, b: Any, rcond: Any = None, *, driver: Any = None) -> Any:
    """The least-squares solution of ``a @ X = b`` for full-rank ``a``, with the residuals'
    squared norms (tall ``a``), the rank and no singular values (as PyTorch's default
    CPU driver, gelsy)."""
    from ._ops import matmul, reshape, sub, sum as sum_

    _check_matrix(a, "lstsq")
    vector = b.ndim == a.ndim - 1
    b2 = reshape(b, tuple(b.shape) + (1,)) if vector else b
    solution = matmul(pinv(a), b2)
    m, n = a.shape[-2], a.shape[-1]
    if m > n:
        r = sub(matmul(a, solution), b2)
        residuals = sum_(r * r, -2)
    else:
        residuals = a.new_zeros((0,))
    rank = a.new_full(tuple(a.shape[:-2]), min(m, n), dtype="int64")
    if vector:
        solution = reshape(solution, tuple(solution.shape[:-1]))
    return LstsqResult(solution, residuals, rank, a.new_zeros((0,)))


def matrix_exp(x: Any) -> Any:
    """The matrix exponential."""
    _check_square(x, "matrix_exp")
    return _apply(_d.MATRIX_EXP, x)


def matrix_power(x: Any, n: int) -> Any:
    """``x`` multiplied by itself ``n`` times (the inverse's power for negative ``n``; the
    identity for 0), by repeated squaring."""
    from ._ops import matmul

    _check_square(x, "matrix_power")
    if n < 0:
        x, n = inv(x), -n
    if n == 0:
        from .creation import eye

        return eye(x.shape[-1], dtype=x.dtype, device=x.device).expand(*x.shape)
    result, base = None, x
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return result


def cross(x: Any, y: Any, *, dim: int = -1) -> Any:
    """The cross product of 3-vectors along ``dim`` (broadcast together)."""
    from ._ops import cross as cross_

    return cross_(x, y, dim=dim)


__all__ = [
    "EighResult", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cross",
    "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_exp", "matrix_norm", "matrix_power",
    "norm", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "vector_norm",
]
