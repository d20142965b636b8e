"""Records of the further elementwise math (:mod:`pullback._ops.special_elementwise`): inverse and
hyperbolic trigonometry, exp2/log2/log10, sinc, atan2, copysign, hypot, logaddexp(2), xlogy,
lerp, nan_to_num, isclose/allclose, isposinf/isneginf."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb

from ...dtypes import is_floating
from .elementwise import _binary, _specials, _unary
from ._inputs import FLOATS, INTS, exact, maker, nonzero, positive, values
from ._record import Arg, OpRecord, Sample


def _at_zero(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """x = 0, where sinc is 1 and its gradient 0. PyTorch's double backward is NaN there (its
    formula divides 0 by 0 before masking): values and first derivatives are compared."""
    return [Sample((Arg(exact([-1.5, 0.0, 0.5, 2.0], dtype)),), label="at-zero",
                   gradcheck=False)]


def _xlogy_zeros(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    # x = 0 gives 0 even where y = 0; PyTorch's gradients there (0 for x where y <= 0).
    x = Arg(exact([0.0, 0.0, 1.5, 2.0], dtype))
    y = Arg(exact([0.0, 2.0, 0.5, 1.5], dtype))
    return [Sample((x, y), label="x-zero", gradcheck=False)]


def _copysign_zeros(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = Arg(exact([0.0, -1.5, 2.0, 0.5], dtype))
    y = Arg(exact([-1.0, 2.0, -0.0, 0.0], dtype))
    return [Sample((x, y), label="zeros", gradcheck=False)]


def _large(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Far-apart operands, where a naive log(e^x + e^y) overflows."""
    x = Arg(exact([-60.0, 60.0, 0.0], dtype))
    return [Sample((x, Arg(exact([55.0, 58.0, -3.0], dtype))), label="large")]


_UNIT = {"low": -0.9, "high": 0.9}
UNARY = [
    _unary("acos", make=values, bounds=_UNIT),
    _unary("asin", make=values, bounds=_UNIT),
    _unary("atan", make=values, dtypes=FLOATS + INTS),
    _unary("cosh", make=values),
    _unary("sinh", make=values),
    _unary("tan", make=values, bounds={"low": -1.2, "high": 1.2}),
    _unary("asinh", make=values),
    _unary("acosh", make=positive, bounds={"low": 1.2, "high": 3.0}),
    _unary("atanh", make=values, bounds=_UNIT),
    _unary("exp2", make=values, dtypes=FLOATS + INTS),
    _unary("log2", make=positive, dtypes=FLOATS + INTS),
    _unary("log10", make=positive),
    _unary("sinc", make=values, extra=_at_zero),
]

BINARY = [
    _binary("atan2", dtypes=FLOATS + INTS),
    _binary("copysign", dtypes=FLOATS, make_y=values, extra=(_copysign_zeros,)),
    _binary("hypot", dtypes=("float16", "float32", "float64")),
    _binary("logaddexp", dtypes=("float16", "float32", "float64"), make_x=values,
            extra=(_large,)),
    _binary("logaddexp2", dtypes=("float32", "float64"), make_x=values, extra=(_large,)),
    _binary("xlogy", dtypes=FLOATS, make_x=values, make_y=positive, extra=(_xlogy_zeros,)),
]


def _lerp_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    w = maker(values, dtype, rng, low=0.0, high=1.0)
    return [
        Sample((Arg(mk((2, 3))), Arg(mk((2, 3))), 0.3)),
        Sample((Arg(mk((2, 3))), Arg(mk((3,))), 0.75)),
        Sample((Arg(mk((2, 3))), Arg(mk((2, 3))), Arg(w((2, 3))))),
        Sample((Arg(mk((2, 1))), Arg(mk((1, 3))), Arg(w((2, 3))))),
        Sample((Arg(mk(())), Arg(mk(())), Arg(w(())))),
        Sample((Arg(mk((3, 4)), "transposed"), Arg(mk((3, 4)), "strided"), 0.5)),
    ]


def _nan_to_num_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    if not is_floating(dtype):
        return [Sample((Arg(values((2, 3), dtype, rng)),))]
    special = exact([np.nan, np.inf, -np.inf, 0.5, -1.5], dtype)
    return [
        Sample((Arg(nonzero((2, 3), dtype, rng)),)),
        Sample((Arg(special),), label="specials"),
        Sample((Arg(special),), {"nan": 1.0, "posinf": 9.0, "neginf": -9.0}, label="values"),
        Sample((Arg(special),), {"posinf": 3.0}, label="posinf-only"),
    ]


def _pair_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = nonzero((2, 3), dtype, rng)
    near = (x + np.asarray(1e-9, dtype=x.dtype)).astype(dtype) if is_floating(dtype) else x
    far = (x * 2).astype(dtype)
    out = [Sample((Arg(x), Arg(near)), label="near"), Sample((Arg(x), Arg(far)), label="far"),
           Sample((Arg(x), Arg(x[1])), label="broadcast")]
    if is_floating(dtype):
        sp = exact([np.nan, np.inf, -np.inf, 1.0], dtype)
        out += [Sample((Arg(sp), Arg(exact([np.nan, np.inf, np.inf, 1.001], dtype))),
                       label="specials"),
                Sample((Arg(sp), Arg(exact([np.nan, np.inf, -np.inf, 1.0], dtype))),
                       {"equal_nan": True}, label="equal-nan"),
                Sample((Arg(x), Arg(far)), {"rtol": 2.0}, label="rtol")]
    return out


def _allclose(x: Any, y: Any, **kw: Any) -> Any:
    return pb.tensor(pb.allclose(x, y, **kw), device=x.device)  # the Python bool, on x's device


OTHERS = [
    OpRecord(name="lerp", fn=pb.lerp, torch=lambda t: t.lerp, ops=("add", "mul", "sub"),
             dtypes=("float32", "float64"), samples=_lerp_samples),
    OpRecord(name="nan_to_num", fn=pb.nan_to_num, torch=lambda t: t.nan_to_num,
             ops=("where", "isnan", "equal", "copy"), dtypes=FLOATS + INTS, samples=_nan_to_num_samples,
             note="The gradient passes where x is finite, 0 elsewhere (PyTorch's)."),
    OpRecord(name="isclose", fn=pb.isclose, torch=lambda t: t.isclose,
             ops=("equal", "less_equal"), dtypes=("float32", "float64", "int64"),
             samples=_pair_samples, differentiable=False),
    OpRecord(name="allclose", fn=_allclose,
             torch=lambda t: lambda x, y, **kw: t.tensor(t.allclose(x, y, **kw)),
             ops=("equal", "less_equal", "all"), dtypes=("float32", "float64"),
             samples=_pair_samples, differentiable=False),
    *[OpRecord(name=name, fn=getattr(pb, name), torch=(lambda n: lambda t: getattr(t, n))(name),
               ops=("equal",), dtypes=FLOATS + INTS, differentiable=False,
               samples=lambda dtype, rng: _specials(dtype, rng) + [
                   Sample((Arg(values((2, 3), dtype, rng)),))])
      for name in ("isposinf", "isneginf")],
]

RECORDS = [*UNARY, *BINARY, *OTHERS]
