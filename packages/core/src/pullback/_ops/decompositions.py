"""Matrix functions and decompositions behind :mod:`pullback.linalg`: inv, det, log|det| and
the sign of det, solve, cholesky, qr, svd, eigh, matrix_exp. Every op works on the last two
axes and batches over the leading ones (NumPy's and SciPy's stacked routines).

A decomposition with several outputs is one op with a ``part`` attribute (``qr`` gives "Q" or
"R", ``svd`` "U", "S" or "Vh", ``eigh`` "values" or "vectors"): the vector-Jacobian product
is linear in the cotangents, so each part's rule is the decomposition's backward with the
other cotangents zero, and the parts' gradients add. The rules are PyTorch's formulas
(``FunctionsManual.cpp``), written with ``F`` ops so that every order is exact. Where they
divide by differences of singular values or eigenvalues (U and Vh of svd, the eigenvectors
of eigh) the gradient is infinite or NaN at repeated values, as PyTorch documents; the
singular values and eigenvalues alone (svdvals, eigvalsh) have gradients everywhere.
"""

from __future__ import annotations

from typing import Any

from ..errors import ShapeError
from ..registry import Op
from ._declare import declare


def _mT(F: Any, x: Any) -> Any:  # noqa: N802 - PyTorch's name
    return F.swapaxes(x, a=-1, b=-2)


def _diag_embed(F: Any, v: Any) -> Any:
    """Matrices with ``v`` (..., k) on their diagonals."""
    k = v.shape[-1]
    return F.mul(F.reshape(v, shape=tuple(v.shape) + (1,)), F.eye(k, like=v))


def _diagonal(F: Any, m: Any) -> Any:
    """The diagonals (..., k) of square matrices ``m``."""
    k = m.shape[-1]
    return F.sum(F.mul(m, F.eye(k, like=m)), axis=-1)


def _linalg(name: str, kernel: Any, doc: str, **flags: Any) -> Op:
    return declare(Op(name, kernel, family="linalg", doc=doc, **flags))


# -- inverse, determinant, solve --------------------------------------------------------------

INV = _linalg("inv", lambda xp: xp.linalg.inv, "matrix inverse", save_output=True,
              save_inputs=False)
INV.def_grad(lambda F, g, out, x: (F.neg(F.matmul(_mT(F, out), F.matmul(g, _mT(F, out)))),))


def _slogdet_part(xp: Any) -> Any:
    def slogdet(x: Any, part: str) -> Any:
        sign, logabs = xp.linalg.slogdet(x)
        return (sign if part == "sign" else logabs).astype(x.dtype, copy=False)

    return slogdet


DET = _linalg("det", lambda xp: lambda x: xp.asarray(xp.linalg.det(x), dtype=x.dtype),
              "determinant", save_output=True)
LOGABSDET = _linalg("logabsdet", lambda xp: lambda x: _slogdet_part(xp)(x, "logabs"),
                    "log |det|")
SLOGDET_SIGN = declare(Op("slogdet_sign", lambda xp: lambda x: _slogdet_part(xp)(x, "sign"),
                          differentiable=False, family="linalg", doc="sign of det"))


@DET.def_grad
def _det_grad(F: Any, g: Any, out: Any, x: Any) -> Any:
    # d det = det * tr(A^-1 dA): the gradient is g det A^-T (invertible A).
    scale = F.reshape(F.mul(g, out), shape=tuple(out.shape) + (1, 1))
    return (F.mul(scale, _mT(F, F.inv(x))),)


@LOGABSDET.def_grad
def _logabsdet_grad(F: Any, g: Any, out: Any, x: Any) -> Any:
    return (F.mul(F.reshape(g, shape=tuple(g.shape) + (1, 1)), _mT(F, F.inv(x))),)


SOLVE = _linalg("solve", lambda xp: xp.linalg.solve, "the X with A X = B", save_output=True)


@SOLVE.def_grad
def _solve_grad(F: Any, g: Any, out: Any, a: Any, b: Any, needs: Any) -> Any:
    gb = F.solve(_mT(F, a), g)
    ga = F.neg(F.matmul(gb, _mT(F, out))) if needs[0] else None
    return ga, gb


# -- cholesky ---------------------------------------------------------------------------------

def _cholesky_kernel(xp: Any) -> Any:
    return lambda x: xp.linalg.cholesky(x)


CHOLESKY = _linalg("cholesky", _cholesky_kernel, "lower Cholesky factor", save_output=True,
                   save_inputs=False)


def _phi(F: Any, x: Any) -> Any:
    """The lower triangle with the diagonal halved."""
    return F.sub(F.tril(x), F.mul(_diag_embed(F, _diagonal(F, x)), 0.5))


@CHOLESKY.def_grad
def _cholesky_grad(F: Any, g: Any, out: Any, x: Any) -> Any:
    # PyTorch's cholesky_backward: S = L^-T phi(L^T gL) L^-1, gA = (S + S^T) / 2.
    linv = F.inv(out)
    s = F.matmul(_mT(F, linv), F.matmul(_phi(F, F.matmul(_mT(F, out), F.tril(g))), linv))
    return (F.mul(F.add(s, _mT(F, s)), 0.5),)


# -- qr ---------------------------------------------------------------------------------------

def _qr_kernel(xp: Any) -> Any:
    def qr(x: Any, part: str) -> Any:
        q, r = xp.linalg.qr(x, mode="reduced")
        return q if part == "Q" else r

    return qr


QR = _linalg("qr", _qr_kernel, "Q or R of the reduced QR decomposition", save_output=True)


def _copyltu(F: Any, m: Any) -> Any:
    """The lower triangle mirrored onto the upper one."""
    return F.add(F.tril(m), _mT(F, F.tril(m, k=-1)))


@QR.def_grad
def _qr_grad(F: Any, g: Any, out: Any, x: Any, part: str) -> Any:
    # A = QR with m >= n: M = R gR^T - gQ^T Q, gA = (gQ + Q copyltu(M)) R^-T.
    q = out if part == "Q" else F.qr(x, part="Q")
    r = out if part == "R" else F.qr(x, part="R")
    if part == "Q":
        m = F.neg(F.matmul(_mT(F, g), q))
        left = F.add(g, F.matmul(q, _copyltu(F, m)))
    else:
        left = F.matmul(q, _copyltu(F, F.matmul(r, _mT(F, g))))
    return (_mT(F, F.solve(r, _mT(F, left))),)


# -- svd --------------------------------------------------------------------------------------

def _svd_kernel(xp: Any) -> Any:
    def svd(x: Any, part: str) -> Any:
        if part == "S":
            return xp.linalg.svd(x, compute_uv=False)
        u, s, vh = xp.linalg.svd(x, full_matrices=False)
        return u if part == "U" else vh

    return svd


SVD = _linalg("svd", _svd_kernel, "U, S or Vh of the reduced SVD", save_output=True)


def inverse_gaps(F: Any, s2: Any) -> Any:
    """F_ij = 1 / (s2_j - s2_i) off the diagonal, 0 on it (inf at repeated values); shared
    with pullback.func's jvp rules of these ops."""
    k = s2.shape[-1]
    gaps = F.sub(F.reshape(s2, shape=tuple(s2.shape[:-1]) + (1, k)),
                 F.reshape(s2, shape=tuple(s2.shape) + (1,)))
    eye = F.eye(k, like=s2)
    return F.mul(F.div(1.0, F.add(gaps, eye)), F.sub(1.0, eye))


@SVD.def_grad
def _svd_grad(F: Any, g: Any, out: Any, x: Any, part: str) -> Any:
    # Townsend's reduced-SVD backward, one cotangent at a time.
    u = out if part == "U" else F.svd(x, part="U")
    s = out if part == "S" else F.svd(x, part="S")
    vh = out if part == "Vh" else F.svd(x, part="Vh")
    if part == "S":
        return (F.matmul(F.mul(u, F.reshape(g, shape=tuple(g.shape[:-1]) + (1,) + g.shape[-1:])),
                         vh),)
    v = _mT(F, vh)
    gaps = inverse_gaps(F, F.mul(s, s))
    s_row = F.reshape(s, shape=tuple(s.shape[:-1]) + (1,) + s.shape[-1:])  # scales columns
    if part == "U":
        inner = F.mul(gaps, F.sub(F.matmul(_mT(F, u), g), F.matmul(_mT(F, g), u)))
        core = F.matmul(F.mul(inner, s_row), vh)
        # (I - U U^T) gU S^-1 V^T: the part of gU outside U's span (m > k).
        outside = F.sub(g, F.matmul(u, F.matmul(_mT(F, u), g)))
        return (F.add(F.matmul(u, core), F.matmul(F.div(outside, s_row), vh)),)
    gv = _mT(F, g)
    inner = F.mul(gaps, F.sub(F.matmul(vh, gv), F.matmul(_mT(F, gv), v)))
    s_col = F.reshape(s, shape=tuple(s.shape) + (1,))  # scales rows
    core = F.matmul(F.mul(s_col, inner), vh)
    outside = F.sub(_mT(F, gv), F.matmul(F.matmul(_mT(F, gv), v), vh))
    return (F.add(F.matmul(u, core), F.matmul(F.div(u, s_row), outside)),)


# -- eigh -------------------------------------------------------------------------------------

def _eigh_kernel(xp: Any) -> Any:
    def eigh(x: Any, part: str, uplo: str = "L") -> Any:
        if part == "values":
            return xp.linalg.eigvalsh(x, UPLO=uplo)
        return xp.linalg.eigh(x, UPLO=uplo)[1]

    return eigh


EIGH = _linalg("eigh", _eigh_kernel, "eigenvalues or eigenvectors of a symmetric matrix",
               save_output=True)


@EIGH.def_grad
def _eigh_grad(F: Any, g: Any, out: Any, x: Any, part: str, uplo: str = "L") -> Any:
    # PyTorch's linalg_eig_backward (Hermitian): gA = V (diag(gL) + skew(V^T gV) / E) V^T,
    # E_ij = L_j - L_i.
    v = out if part == "vectors" else F.eigh(x, part="vectors", uplo=uplo)
    if part == "values":
        inner = _diag_embed(F, g)
    else:
        lam = F.eigh(x, part="values", uplo=uplo)
        vg = F.matmul(_mT(F, v), g)
        skew = F.mul(F.sub(vg, _mT(F, vg)), 0.5)
        inner = F.mul(skew, inverse_gaps(F, lam))
    return (F.matmul(v, F.matmul(inner, _mT(F, v))),)


# -- matrix exponential -----------------------------------------------------------------------

def _expm_kernel(xp: Any) -> Any:
    if xp.__name__ == "cupy":  # pragma: no cover - GPU only
        from cupyx.scipy.linalg import expm
    else:
        from scipy.linalg import expm
    return lambda x: expm(x).astype(x.dtype, copy=False)


MATRIX_EXP = _linalg("matrix_exp", _expm_kernel, "matrix exponential")


@MATRIX_EXP.def_grad
def _matrix_exp_grad(F: Any, g: Any, out: Any, x: Any) -> Any:
    # The adjoint of the Frechet derivative: the top-right block of exp([[A^T, g], [0, A^T]]).
    n = x.shape[-1]
    at = _mT(F, x)
    zeros = F.mul(at, 0.0)
    block = F.cat(F.cat(at, g, axis=-1), F.cat(zeros, at, axis=-1), axis=-2)
    big = F.matrix_exp(block)
    key = (Ellipsis, slice(0, n), slice(n, 2 * n))
    return (F.getitem(big, key=key),)


def check_square(x: Any, name: str) -> None:
    """A ShapeError naming the function unless ``x`` is a (stack of) square matrices."""
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ShapeError(f"{name}: expected square matrices (..., n, n), got shape "
                         f"{tuple(x.shape)}")


def check_matrix(x: Any, name: str) -> None:
    if x.ndim < 2:
        raise ShapeError(f"{name}: expected matrices (..., m, n), got shape {tuple(x.shape)}")
