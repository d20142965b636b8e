"""Records of :mod:`pullback.linalg`: norms, inv, det, slogdet, solve, cholesky, qr, svd,
svdvals, eigh, eigvalsh, pinv, lstsq, matrix_exp, matrix_power, cross.

Decompositions are defined up to signs (columns of Q, U, V, eigenvectors) and read one
triangle of a symmetric input: their records compare sign-free quantities (squared entries)
of symmetrized or positive-definite inputs built inside the function, which PyTorch's and
pullback's backward both see in full. Samples keep singular values and eigenvalues apart;
at repeated values the gradient of each single eigenvalue depends on the basis chosen in the
eigenspace (in PyTorch too), so there is nothing to compare there.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

import pullback as pb

from ...errors import ShapeError
from ._record import Arg, ErrorCase, OpRecord, Sample

_DTYPES = ("float32", "float64")
_F64 = np.dtype(np.float64)


def _well_conditioned(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator,
                      ) -> np.ndarray:
    """Random matrices plus a multiple of the identity (square) or with distinct, well
    separated singular values (rectangular): far from singular and from repeated values."""
    m, n = shape[-2], shape[-1]
    batch = shape[:-2]
    k = min(m, n)
    u = np.linalg.qr(rng.normal(size=batch + (m, m)))[0][..., :k]
    v = np.linalg.qr(rng.normal(size=batch + (n, n)))[0][..., :k]
    s = np.linspace(2.0, 0.7, k) + rng.uniform(0, 0.1, size=batch + (k,))
    return ((u * s[..., None, :]) @ np.swapaxes(v, -1, -2)).astype(dtype)


def _samples(shapes: Sequence[Sequence[tuple[int, ...]]], layouts: bool = True,
             extra: Callable[..., list[Sample]] | None = None, **kwargs: Any,
             ) -> Callable[[np.dtype, np.random.Generator], list[Sample]]:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        out = [Sample(tuple(Arg(_well_conditioned(s, dtype, rng)) if len(s) >= 2 else
                            Arg(rng.normal(size=s).astype(dtype)) for s in group), dict(kwargs))
               for group in shapes]
        if layouts:
            first = shapes[0][0]
            out.append(Sample((Arg(_well_conditioned(first, dtype, rng), "transposed"),)
                              + tuple(Arg(_well_conditioned(s, dtype, rng)) if len(s) >= 2 else
                                      Arg(rng.normal(size=s).astype(dtype))
                                      for s in shapes[0][1:]), dict(kwargs)))
        return out + (extra(dtype, rng) if extra else [])

    return samples


def _same(name: str) -> Callable[[Any], Any]:
    return lambda t: getattr(t.linalg, name)


def _record(name: str, fn: Callable[..., Any], torch: Callable[[Any], Any], samples: Any,
            ops: Sequence[str], errors: Any = None, note: str = "",
            tolerance: Any = None) -> OpRecord:
    return OpRecord(name=f"linalg.{name}", fn=fn, torch=torch, ops=tuple(ops), dtypes=_DTYPES,
                    samples=samples, note=note, tolerance=dict(tolerance or {}),
                    **({"errors": errors} if errors else {}))


def _square_error(name: str) -> Callable[[np.random.Generator], list[ErrorCase]]:
    return lambda rng: [ErrorCase((Arg(rng.normal(size=(2, 3))),), ShapeError,
                                  rf"{name}: expected square matrices.*\(2, 3\)")]


def _sym(x: Any) -> Any:
    return (x + x.mT) * 0.5


def _spd(x: Any, lib: Any) -> Any:
    n = x.shape[-1]
    # The identity on x's device (a backend under the conformance suite is not the CPU).
    eye = lib.eye(n, dtype=x.dtype, device=x.device) if hasattr(x, "device") else lib.eye(
        n, dtype=x.dtype)
    return x @ x.mT + eye * 0.5


_SQUARE: list[list[tuple[int, ...]]] = [[(3, 3)], [(2, 3, 3)], [(1, 1)]]
_TALL: list[list[tuple[int, ...]]] = [[(4, 3)], [(2, 3, 2)], [(3, 3)]]
_ANY: list[list[tuple[int, ...]]] = [[(4, 3)], [(3, 4)], [(2, 3, 3)]]


def _eigh_pair(lib: Any) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        vals, vecs = lib.linalg.eigh(_sym(x))
        return vals, vecs * vecs

    return fn


def _svd_parts(lib: Any) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        u, s, vh = lib.linalg.svd(x, full_matrices=False)
        return u * u, s, vh * vh

    return fn


def _qr_parts(lib: Any) -> Callable[[Any], Any]:
    def fn(x: Any) -> Any:
        q, r = lib.linalg.qr(x)
        return q * q, r * r

    return fn


def _solve_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    a = lambda s: Arg(_well_conditioned(s, dtype, rng))  # noqa: E731
    b = lambda s: Arg(np.asarray(rng.normal(size=s), dtype))  # noqa: E731
    return [Sample((a((3, 3)), b((3, 2)))), Sample((a((3, 3)), b((3,)))),
            Sample((a((2, 3, 3)), b((2, 3, 4)))), Sample((a((2, 3, 3)), b((2, 3)))),
            Sample((a((3, 3)), b((2, 3, 1)))), Sample((a((3, 3)), b((2, 3))), {"left": False}),
            Sample((Arg(_well_conditioned((3, 3), dtype, rng), "transposed"), b((3, 2))))]


def _norm_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = lambda s: Arg(_well_conditioned(s, dtype, rng))  # noqa: E731
    out = [Sample((x((3, 4)),), {"ord": o}) for o in ("fro", "nuc", 2, -2, 1, -1, math.inf,
                                                      -math.inf)]
    out += [Sample((x((2, 3, 3)),), {"ord": "nuc", "keepdim": True}),
            Sample((x((3, 4)),), {"ord": 1, "dim": (1, 0)})]
    return out


def _vector_norm_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = Arg((rng.uniform(0.5, 2.0, size=(3, 4)) * rng.choice([-1, 1], (3, 4))).astype(dtype))
    return [Sample((x,)), Sample((x,), {"ord": 1, "dim": 1}), Sample((x,), {"ord": 3.5}),
            Sample((x,), {"ord": math.inf, "dim": 0, "keepdim": True})]


def _lstsq(lib: Any) -> Callable[..., Any]:
    return lambda a, b: lib.linalg.lstsq(a, b).solution


RECORDS = [
    _record("vector_norm", pb.linalg.vector_norm, _same("vector_norm"), _vector_norm_samples,
            ("norm2",)),
    _record("matrix_norm", pb.linalg.matrix_norm, _same("matrix_norm"), _norm_samples,
            ("norm2", "svd", "amax")),
    _record("norm", pb.linalg.norm, _same("norm"),
            _samples([[(3, 4)], [(5,)]], layouts=False), ("norm2",)),
    _record("inv", pb.linalg.inv, _same("inv"), _samples(_SQUARE), ("inv",),
            errors=_square_error("inv")),
    _record("det", pb.linalg.det, _same("det"), _samples(_SQUARE), ("det",),
            errors=_square_error("det")),
    _record("slogdet", pb.linalg.slogdet, _same("slogdet"), _samples(_SQUARE),
            ("logabsdet", "slogdet_sign")),
    _record("solve", pb.linalg.solve, _same("solve"), _solve_samples, ("solve",),
            errors=lambda rng: [ErrorCase((Arg(np.eye(3)), Arg(np.ones((2, 2)))), ShapeError,
                                          r"solve: a \(3, 3\) and b \(2, 2\)")]),
    _record("cholesky", lambda x, **kw: pb.linalg.cholesky(_spd(x, pb), **kw),
            lambda t: lambda x, **kw: t.linalg.cholesky(_spd(x, t), **kw),
            lambda dtype, rng: _samples(_SQUARE)(dtype, rng) + _samples(
                [[(3, 3)]], layouts=False, upper=True)(dtype, rng), ("cholesky",),
            note="On x x^T + I/2, built inside the function (symmetric positive definite)."),
    _record("qr", _qr_parts(pb), lambda t: _qr_parts(t), _samples(_TALL), ("qr",),
            note="Q and R squared (free of the columns' signs); m >= n."),
    _record("svd", _svd_parts(pb), lambda t: _svd_parts(t), _samples(_ANY), ("svd",),
            note="U and Vh squared (free of the signs); distinct singular values."),
    _record("svdvals", pb.linalg.svdvals, _same("svdvals"),
            _samples(_ANY), ("svd",)),
    _record("eigh", _eigh_pair(pb), lambda t: _eigh_pair(t), _samples(_SQUARE[:2]), ("eigh",),
            note="On (x + x^T)/2; eigenvectors squared (free of the signs)."),
    _record("eigvalsh", lambda x: pb.linalg.eigvalsh(_sym(x)),
            lambda t: lambda x: t.linalg.eigvalsh(_sym(x)),
            _samples(_SQUARE), ("eigh",)),
    _record("pinv", pb.linalg.pinv, _same("pinv"), _samples(_ANY), ("inv", "matmul")),
    _record("lstsq", _lstsq(pb), lambda t: _lstsq(t),
            lambda dtype, rng: [Sample((Arg(_well_conditioned((5, 3), dtype, rng)),
                                        Arg(rng.normal(size=(5, 2)).astype(dtype))))],
            ("inv", "matmul"), note="The solution of a full-rank tall system."),
    _record("matrix_exp", pb.linalg.matrix_exp, _same("matrix_exp"), _samples(_SQUARE),
            ("matrix_exp",), tolerance={"float32": (1e-4, 1e-5)},
            note="float32 at 1e-4: SciPy's and PyTorch's Pade approximations differ."),
    _record("matrix_power", pb.linalg.matrix_power, _same("matrix_power"),
            lambda dtype, rng: [Sample((Arg(_well_conditioned((3, 3), dtype, rng)), n))
                                for n in (0, 1, 3, -2)], ("matmul", "inv")),
    _record("cross", pb.linalg.cross, _same("cross"),
            lambda dtype, rng: [Sample((Arg(rng.normal(size=(4, 3)).astype(dtype)),
                                        Arg(rng.normal(size=(4, 3)).astype(dtype))))],
            ("mul", "sub")),
]
