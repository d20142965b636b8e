"""Reductions in float16 and bfloat16 accumulate in float32, as PyTorch's do: every result is
within one unit in the last place of the exact (float64) value for its low-precision inputs.

NumPy alone accumulates float16 partly, and ml_dtypes' bfloat16 entirely, in the input dtype:
before core did otherwise, 1000 bfloat16 0.1s summed to 32. PyTorch is no oracle for ``prod``
(it multiplies float16/bfloat16 in the input dtype), so float64 is the reference throughout.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb

# One unit in the last place, relative to the value: 2**-10 (float16), 2**-7 (bfloat16).
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7}

CASES: dict[str, tuple[Callable[..., Any], Callable[..., Any], tuple[tuple[int, ...], ...],
                       tuple[float, float]]] = {
    # name: (pullback fn, float64 reference, input shapes, value range)
    "sum": (pb.sum, np.sum, ((4096,),), (0.0, 1.0)),
    "mean": (pb.mean, np.mean, ((4096,),), (0.0, 1.0)),
    "cumsum": (lambda x: pb.cumsum(x, 0), lambda x: np.cumsum(x, 0), ((2048,),), (0.0, 1.0)),
    "prod": (pb.prod, np.prod, ((200,),), (0.99, 1.02)),
    "logsumexp": (pb.logsumexp, lambda x: np.log(np.exp(x).sum()), ((4096,),), (-1.0, 1.0)),
    "norm": (pb.norm, np.linalg.norm, ((4096,),), (0.0, 1.0)),
    "sum_to": (lambda x: pb.sum_to(x, (3,)), lambda x: x.sum(axis=0), ((4096, 3),), (0.0, 1.0)),
    "matmul": (pb.matmul, np.matmul, ((1, 4096), (4096, 1)), (0.0, 1.0)),
    "einsum": (lambda x, y: pb.einsum("i,i->", x, y), lambda x, y: np.dot(x, y),
               ((4096,), (4096,)), (0.0, 1.0)),
}


@pytest.mark.parametrize("dtype", sorted(EPS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_low_precision_reductions_are_within_one_ulp_of_exact(name: str, dtype: str) -> None:
    fn, reference, shapes, (low, high) = CASES[name]
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(low, high, s).astype(pb.dtypes.to_dtype(dtype)) for s in shapes]
    out = fn(*(pb.tensor(a) for a in inputs))
    assert str(out.dtype) == dtype
    exact = np.asarray(reference(*(a.astype(np.float64) for a in inputs)), dtype=np.float64)
    got = np.asarray(out, dtype=np.float64)
    assert np.all(np.abs(got - exact) <= EPS[dtype] * np.abs(exact)), \
        f"{name} in {dtype}: worst relative error {np.max(np.abs(got - exact) / np.abs(exact)):.3g}"
