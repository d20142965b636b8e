"""Reduction records: sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std, logsumexp,
norm, cumsum, all/any, and sum_to (the gradient of broadcasting)."""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import pullback as pb

from ...errors import ShapeError
from . import _torch
from ...dtypes import is_floating
from ._inputs import ALL, FLOATS, INTS, exact, maker, nonzero, reduction_samples, values
from ._record import Arg, ErrorCase, OpRecord, Sample

SampleFn = Callable[[np.dtype, np.random.Generator], list[Sample]]


def _axis_errors(name: str, *, tuple_axes: bool = True) -> Callable[..., list[ErrorCase]]:
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        x = Arg(nonzero((2, 3), np.dtype(np.float64), rng))
        out = [ErrorCase((x,), ShapeError, rf"{name}.*axis 2.*2 dims", {"axis": 2},
                         label="axis-out-of-range")]
        if tuple_axes:
            out.append(ErrorCase((x,), ShapeError, rf"{name}.*repeated axis", {"axis": (0, -2)},
                                 label="repeated-axis"))
        else:
            out.append(ErrorCase((x,), TypeError, rf"{name}.*one axis", {"axis": (0, 1)},
                                 label="tuple-axis"))
        return out

    return errors


def _reduce(name: str, *, dtypes: Sequence[str], torch: Any = None,
            make: Callable[..., np.ndarray] = nonzero, ops: Sequence[str] | None = None,
            differentiable: bool = True, tuple_axes: bool = True, empty_axis: bool = True,
            attrs: Sequence[Mapping[str, Any]] = (), extra: SampleFn | None = None,
            fn: Callable[..., Any] | None = None, note: str = "",
            tolerance: Mapping[str, tuple[float, float]] | None = None) -> OpRecord:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        out = reduction_samples(maker(make, dtype, rng), tuple_axes=tuple_axes,
                                empty_axis=empty_axis, extra=attrs)
        return out + (extra(dtype, rng) if extra else [])

    return OpRecord(
        name=name, fn=fn or getattr(pb, name),
        torch=torch or (lambda t: _torch.reduction(t, name)),
        ops=tuple(ops or (name,)), dtypes=tuple(dtypes), samples=samples,
        errors=_axis_errors(name, tuple_axes=tuple_axes), differentiable=differentiable, note=note,
        tolerance=dict(tolerance or {}),
    )


def _long(value: float, n: int = 1000, **kwargs: Any) -> SampleFn:
    """A long run of one value in float16/bfloat16: sums must accumulate in float32 (as
    PyTorch's do); NumPy alone sums 1000 bfloat16 0.1s to 32."""

    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        if not (is_floating(dtype) and dtype.itemsize == 2):
            return []
        return [Sample((Arg(exact(np.full(n, value), dtype)),), kwargs, label="long-accumulation",
                       gradcheck=False)]

    return samples


def _both(*fns: SampleFn) -> SampleFn:
    return lambda dtype, rng: [s for fn in fns for s in fn(dtype, rng)]


def _prod_zeros(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """No zero, one zero and several zeros in a row: the gradient is not ``out / x`` there."""
    x = exact([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [2.0, -1.0, 0.5]], dtype)
    return [Sample((Arg(x),), {"axis": 1}, label="zeros"),
            Sample((Arg(x),), {"axis": 0}, label="zeros"),
            Sample((Arg(x),), {}, label="zeros")]


_INT_PROD_0D = ("PyTorch keeps int32 for the product of a 0-d int32 tensor; NumPy and pullback "
                "give int64, as for every other int32 product")


def _prod_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    # No long run here: PyTorch's float16/bfloat16 prod accumulates in the input dtype (200
    # times 1.01 in bfloat16: 4.44 against 4.75 correctly rounded), so it is no oracle for
    # that; test_op_precision checks pullback's against float64.
    samples = reduction_samples(maker(nonzero, dtype, rng)) + _prod_zeros(dtype, rng)
    if dtype == np.int32:
        samples = [Sample(s.args, s.kwargs, s.label, s.gradcheck,
                          _INT_PROD_0D if s.args[0].value.ndim == 0 else "") for s in samples]
    return samples


def _ties(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = exact([[1, 3, 3], [2, 2, 2], [0, 1, 0]], dtype)
    return [Sample((Arg(x),), {"axis": 1}, label="ties", gradcheck=False),
            Sample((Arg(x),), {}, label="ties", gradcheck=False)]


def _lse_extremes(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    minus_inf = exact([[-np.inf, -np.inf], [0.0, -np.inf]], dtype)
    out = [Sample((Arg(minus_inf),), {"axis": 1}, label="minus-inf", gradcheck=False)]
    if dtype.itemsize >= 4:  # 1000 is beyond float16; where exp() alone would overflow
        big = exact([[1000.0, 999.0], [-1000.0, -1001.0]], dtype)
        out.append(Sample((Arg(big),), {"axis": 1}, label="large"))
    return out


_VAR_ATTRS = ({"axis": 1, "correction": 0}, {"axis": 0, "correction": 2},
              {"axis": 1, "unbiased": False, "keepdims": True})


def _degrees_of_freedom(sample: Sample) -> float:
    x = sample.args[0].value
    axis = sample.kwargs.get("axis", sample.kwargs.get("dim"))
    axes = range(x.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    n = math.prod(x.shape[a] for a in axes)
    unbiased = sample.kwargs.get("unbiased")
    correction = sample.kwargs.get("correction", 1) if unbiased is None else int(unbiased)
    return n - correction


def _variance_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Without degrees of freedom left the result is inf or NaN: only values are compared."""
    mk = maker(nonzero, dtype, rng)
    samples = reduction_samples(mk, empty_axis=False, extra=_VAR_ATTRS)
    samples.append(Sample((Arg(mk((3, 2))),), {"axis": 0, "correction": 3}))
    out = []
    for s in samples:
        if _degrees_of_freedom(s) <= 0:
            x = s.args[0]
            s = Sample((Arg(x.value, x.layout, requires_grad=False),), s.kwargs,
                       label="no-degrees-of-freedom", gradcheck=False)
        out.append(s)
    return out


def _norm_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    out = []
    for ord_ in (1, float("inf"), float("-inf"), 0, 3, 0.5, "fro", -1, -2.5):
        out.append(Sample((Arg(mk((3, 4))),), {"ord": ord_, "axis": 1}))
    out.append(Sample((Arg(mk((3, 4))),), {"p": 1}))
    zero_row = exact([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]], dtype)
    for ord_ in (2, 1, 3, float("inf")):
        out.append(Sample((Arg(zero_row),), {"ord": ord_, "axis": 1}, label="zero-row",
                          gradcheck=False))
    return out


def _torch_norm(t: Any) -> Callable[..., Any]:
    def call(x: Any, ord: Any = 2, axis: Any = None, keepdims: Any = None, *,  # noqa: A002
             p: Any = None, **kwargs: Any) -> Any:
        axis, keep = _torch.axis_and_keep({"axis": axis, "keepdims": keepdims, **kwargs})
        ord = p if p is not None else ord
        return t.linalg.vector_norm(x, ord=2 if ord == "fro" else ord, dim=axis, keepdim=keep)

    return call


def _norm_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((2, 3), np.dtype(np.float64), rng))
    return _axis_errors("norm")(rng) + [
        ErrorCase((x,), TypeError, "norm.*ord", {"ord": "fast"}, label="string-ord")]


def _cumsum_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return _long(0.1, axis=0)(dtype, rng) + [
        Sample((Arg(mk((3, 4))),), {"axis": 0}),
        Sample((Arg(mk((3, 4))),), {"axis": -1}),
        Sample((Arg(mk((2, 3, 2))),), {"axis": 1}),
        Sample((Arg(mk((5,))),), {"axis": 0}),
        Sample((Arg(mk(())),), {"axis": 0}),
        Sample((Arg(mk((0, 3))),), {"axis": 0}),
        Sample((Arg(mk((3, 4)), "transposed"),), {"axis": 1}),
        Sample((Arg(mk((2, 3)), "strided"),), {"dim": 1}),
    ]


def _cumsum_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((2, 3), np.dtype(np.float64), rng))
    return [ErrorCase((x,), TypeError, "cumsum.*axis", label="no-axis"),
            ErrorCase((x,), ShapeError, "cumsum.*axis 2", {"axis": 2}, label="axis-out-of-range")]


def _sum_to_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(exact(np.full((1000, 2), 0.1), dtype)), (2,)), label="long-accumulation",
                   gradcheck=False)] + [
        Sample((Arg(mk((2, 3))), (3,))),
        Sample((Arg(mk((2, 3))), (1, 3))),
        Sample((Arg(mk((2, 3))), (2, 1))),
        Sample((Arg(mk((4, 2, 3))), (2, 1))),
        Sample((Arg(mk((2, 3))), ())),
        Sample((Arg(mk((2, 3))), (2, 3))),
        Sample((Arg(mk((0, 3))), (3,))),
        Sample((Arg(mk((3, 4)), "transposed"), (1, 4))),
    ]


def _sum_to_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = Arg(nonzero((2, 3), np.dtype(np.float64), rng))
    return [ErrorCase((x, (4,)), ShapeError, r"sum_to.*\(2, 3\)")]


_MAX_NOTE = ("Along an axis max/min return (values, indices) and the values' gradient goes to the "
             "returned index (the first extremum), as torch.max(dim); over all elements ties "
             "share it, as torch.max(x).")

RECORDS = [
    _reduce("sum", dtypes=ALL, make=values, extra=_long(0.1), tolerance={"float32": (1e-5, 1e-5)},
            note="float32: two summation orders differ by a few ulp of the sum of |x|, not of a "
                 "cancelling result, so the absolute tolerance is 1e-5 (PyTorch's vectorized "
                 "order against NumPy's pairwise one; seen at 1.3e-6 on 54 values)."),
    _reduce("mean", dtypes=FLOATS, empty_axis=False, extra=_long(0.1)),
    OpRecord(name="prod", fn=pb.prod, torch=_torch.prod, ops=("prod",), dtypes=FLOATS + INTS,
             samples=_prod_samples, errors=_axis_errors("prod")),
    _reduce("amax", dtypes=FLOATS + INTS, empty_axis=False, extra=_ties),
    _reduce("amin", dtypes=FLOATS + INTS, empty_axis=False, extra=_ties),
    _reduce("max", dtypes=FLOATS + INTS, tuple_axes=False, empty_axis=False, extra=_ties,
            torch=lambda t: _torch.values_indices(t, "max"), ops=("amax", "argmax", "gather"),
            note=_MAX_NOTE),
    _reduce("min", dtypes=FLOATS + INTS, tuple_axes=False, empty_axis=False, extra=_ties,
            torch=lambda t: _torch.values_indices(t, "min"), ops=("amin", "argmin", "gather"),
            note=_MAX_NOTE),
    _reduce("argmax", dtypes=FLOATS + INTS, tuple_axes=False, empty_axis=False, extra=_ties,
            differentiable=False),
    _reduce("argmin", dtypes=FLOATS + INTS, tuple_axes=False, empty_axis=False, extra=_ties,
            differentiable=False),
    OpRecord(name="var", fn=pb.var, torch=lambda t: _torch.variance(t, "var"),
             ops=("mean", "sum", "sub", "mul", "div"), dtypes=FLOATS, samples=_variance_samples,
             errors=_axis_errors("var")),
    OpRecord(name="std", fn=pb.std, torch=lambda t: _torch.variance(t, "std"),
             ops=("mean", "sum", "sqrt"), dtypes=FLOATS, samples=_variance_samples,
             errors=_axis_errors("std")),
    _reduce("logsumexp", dtypes=FLOATS,
            extra=_both(_lse_extremes, _long(0.1))),
    _reduce("all", dtypes=ALL, make=values, differentiable=False),
    _reduce("any", dtypes=ALL, make=values, differentiable=False),
    OpRecord(name="norm", fn=pb.norm, torch=_torch_norm, ops=("norm2", "sum", "abs", "amax", "amin", "pow"),
             dtypes=FLOATS,
             samples=lambda dtype, rng: (reduction_samples(maker(nonzero, dtype, rng),
                                                           empty_axis=False)
                                         + _norm_samples(dtype, rng) + _long(0.1)(dtype, rng)),
             errors=_norm_errors,
             note="Vector norms; at a zero vector the gradient is 0, as in PyTorch."),
    OpRecord(name="cumsum", fn=pb.cumsum, torch=lambda t: lambda x, axis=None, dim=None: t.cumsum(
        x, dim=dim if dim is not None else axis), ops=("cumsum",), dtypes=FLOATS + INTS,
        samples=_cumsum_samples, errors=_cumsum_errors),
    OpRecord(name="sum_to", fn=pb.sum_to, torch=lambda t: lambda x, shape: x.sum_to_size(shape),
             ops=("sum_to",), dtypes=FLOATS + INTS, samples=_sum_to_samples, errors=_sum_to_errors),
]
