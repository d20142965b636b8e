"""Elementwise records: arithmetic, math, activations, clamp/where, comparisons, logic, casts,
and the Python operators of Tensor."""

from __future__ import annotations

import operator
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

import pullback as pb

from ...dispatch import apply
from ...dtypes import is_floating, to_dtype
from ...errors import (
    ArgumentError, ArgumentTypeError, DeviceError, DivisionByZeroError, DTypeError, ShapeError,
)
from ...registry import OPS
from . import _torch
from ._inputs import (
    ALL, FLOATS, INTS, binary_samples, exact, maker, nonzero, positive, scalar,
    unary_samples, values,
)
from ._record import Arg, ErrorCase, OpRecord, Sample

SampleFn = Callable[[np.dtype, np.random.Generator], list[Sample]]
ErrorFn = Callable[[np.random.Generator], list[ErrorCase]]
_BOOL = np.dtype(bool)


def _f64(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return nonzero(shape, np.dtype(np.float64), rng)


def _i64(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return values(shape, np.dtype(np.int64), rng, -4, 4)


def _mismatch(name: str) -> ErrorFn:
    """Operands that do not broadcast: a ShapeError naming the op and both shapes; and an
    operand that is no Tensor, number or array (a list): a TypeError naming the op and it."""
    return lambda rng: [
        ErrorCase((Arg(_f64((2, 3), rng)), Arg(_f64((4,), rng))), ShapeError,
                  rf"{name}.*\(2, 3\).*\(4,\)"),
        ErrorCase((Arg(_f64((2,), rng)), [1.0, 2.0]), ArgumentTypeError,
                  rf"^{name}: argument 1 is a list \(\[1.0, 2.0\]\)", label="list-operand")]


def _float_operands(name: str, arity: int) -> ErrorFn:
    """Integer-only ops given floats: a DTypeError naming the op and the dtype."""
    return lambda rng: [ErrorCase(tuple(Arg(_f64((3,), rng)) for _ in range(arity)), DTypeError,
                                  rf"{name}.*float64")]


def _kinks(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Zeros, where abs/relu/sign have their kinks: PyTorch's subgradient conventions."""
    return [Sample((Arg(exact([-1.5, 0.0, 0.0, 2.0], dtype)),), label="at-zero", gradcheck=False)]


def _unary(name: str, *, dtypes: Sequence[str] = FLOATS, make: Callable[..., np.ndarray] = nonzero,
           bounds: Mapping[str, float] | None = None,
           attrs: Sequence[Mapping[str, Any]] = ({},), torch: Any = None,
           ops: Sequence[str] | None = None, differentiable: bool = True,
           extra: SampleFn | None = None, errors: ErrorFn | None = None,
           tolerance: Mapping[str, tuple[float, float]] | None = None, note: str = "") -> OpRecord:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        out = unary_samples(maker(make, dtype, rng, **(bounds or {})), attrs)
        return out + (extra(dtype, rng) if extra else [])

    return OpRecord(
        name=name, fn=getattr(pb, name),
        torch=torch or (lambda t: getattr(t, name)),
        ops=tuple(ops or (name,)), dtypes=tuple(dtypes), samples=samples,
        differentiable=differentiable, note=note, tolerance=dict(tolerance or {}),
        **({"errors": errors} if errors else {}),
    )


def _functional(name: str) -> Callable[[Any], Any]:
    return lambda t: getattr(t.nn.functional, name)


def _specials(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    if not is_floating(dtype):
        return []
    return [Sample((Arg(exact([np.nan, np.inf, -np.inf, 0.0, 1.5], dtype)),), label="nan-inf")]


def _halves_and_decimals(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    # On the jumps: finite differences do not apply there (PyTorch's gradient is 0 all the same).
    out = [Sample((Arg(exact([-2.5, -0.5, 0.5, 1.5, 2.5], dtype)),), label="halves-to-even",
                  gradcheck=False)]
    if is_floating(dtype):  # PyTorch rounds integers only with decimals=0
        out.append(Sample((Arg(values((2, 3), dtype, rng, -3.0, 3.0)),), {"decimals": 1}))
    return out


def _saturating(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Large magnitudes, where a naive formula overflows."""
    return [Sample((Arg(exact([-60.0, -30.0, 30.0, 60.0], dtype)),), label="large")]


def _softplus_threshold(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    return [Sample((Arg(exact([-3.0, -0.5, 0.7, 2.5, 5.0], dtype)),),
                   {"beta": 1.0, "threshold": 2.0}, label="both-sides-of-threshold")]


def _bool_operand(name: str) -> ErrorFn:
    return lambda rng: [ErrorCase((Arg(values((3,), _BOOL, rng)),), DTypeError, rf"{name}.*bool")]


UNARY = [
    _unary("neg", dtypes=FLOATS + INTS, errors=_bool_operand("neg")),
    _unary("abs", dtypes=FLOATS + INTS, extra=_kinks),
    _unary("sign", dtypes=FLOATS + INTS, extra=_kinks),
    _unary("exp", make=values),
    _unary("log", make=positive),
    _unary("log1p", make=values, bounds={"low": -0.5, "high": 2.0}),
    _unary("expm1", make=values),
    _unary("sqrt", make=positive),
    _unary("rsqrt", make=positive),
    _unary("square", dtypes=FLOATS + INTS),
    _unary("reciprocal"),
    _unary("sin", make=values),
    _unary("cos", make=values),
    _unary("tanh", make=values, extra=_saturating),
    _unary("sigmoid", make=values, extra=_saturating),
    _unary("relu", dtypes=FLOATS + INTS, extra=_kinks),
    _unary("leaky_relu", attrs=({}, {"negative_slope": 0.2}), torch=_functional("leaky_relu"),
           extra=_kinks),
    _unary("gelu", make=values, attrs=({}, {"approximate": "tanh"}), torch=_functional("gelu"),
           errors=lambda rng: [ErrorCase((Arg(_f64((3,), rng)),), ValueError, "gelu.*approximate",
                                         {"approximate": "fast"})]),
    _unary("silu", make=values, torch=_functional("silu"), extra=_saturating),
    _unary("softplus", make=values, attrs=({}, {"beta": 2.0}), torch=_functional("softplus"),
           extra=_softplus_threshold),
    _unary("erf", make=values),
    # Piecewise constant: zero gradients, as in PyTorch.
    _unary("floor", dtypes=FLOATS + INTS, make=values, bounds={"low": -3.0, "high": 3.0}),
    _unary("ceil", dtypes=FLOATS + INTS, make=values, bounds={"low": -3.0, "high": 3.0}),
    _unary("trunc", dtypes=FLOATS + INTS, make=values, bounds={"low": -3.0, "high": 3.0}),
    _unary("round", dtypes=FLOATS + INTS, make=values, bounds={"low": -3.0, "high": 3.0},
           extra=_halves_and_decimals),
    _unary("frac", make=values, bounds={"low": -3.0, "high": 3.0}, ops=("sub", "trunc")),
    _unary("logical_not", dtypes=ALL, make=values, differentiable=False),
    _unary("bitwise_not", dtypes=INTS + ("bool",), make=values, differentiable=False,
           errors=_float_operands("bitwise_not", 1)),
    _unary("isnan", dtypes=FLOATS + INTS, differentiable=False, extra=_specials),
    _unary("isinf", dtypes=FLOATS + INTS, differentiable=False, extra=_specials),
    _unary("isfinite", dtypes=FLOATS + INTS, differentiable=False, extra=_specials),
]


# -- binary -----------------------------------------------------------------------------------

def _ties(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Equal operands in places: the gradient of max/min is split evenly there, as in PyTorch."""
    x = exact([1, 2, 3, 0], dtype)
    y = exact([1, 0, 3, 1], dtype)
    return [Sample((Arg(x), Arg(y)), label="ties", gradcheck=False)]


def _nan_propagation(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    if not is_floating(dtype):
        return []
    return [Sample((Arg(exact([np.nan, 1.0, 2.0], dtype)), Arg(exact([0.5, np.nan, 3.0], dtype))),
                   label="nan", gradcheck=False)]


def _binary(name: str, *, dtypes: Sequence[str], make_x: Callable[..., np.ndarray] = nonzero,
            make_y: Callable[..., np.ndarray] | None = None, fn: Callable[..., Any] | None = None,
            torch: Any = None, ops: Sequence[str] | None = None, differentiable: bool = True,
            extra: Iterable[SampleFn] = (), errors: ErrorFn | None = None,
            note: str = "") -> OpRecord:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        mx = maker(make_x, dtype, rng)
        my = maker(make_y or make_x, dtype, rng)
        out = binary_samples(mx, my)
        for more in extra:
            out += more(dtype, rng)
        return out

    return OpRecord(
        name=name, fn=fn or getattr(pb, name),
        torch=torch or (lambda t: _torch.binary(t, getattr(t, name))),
        ops=tuple(ops or (name,)), dtypes=tuple(dtypes), samples=samples,
        errors=errors or _mismatch((ops or (name,))[0]), differentiable=differentiable, note=note,
    )


def _with_alpha(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    if dtype.kind == "b":
        return []
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((2, 3))), Arg(mk((3,)))), {"alpha": 2})]


def _rounding_modes(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    return [Sample((Arg(mk((2, 3))), Arg(mk((3,)))), {"rounding_mode": mode})
            for mode in ("floor", "trunc")] + [
        Sample((Arg(mk((2, 3))), scalar(mk)), {"rounding_mode": "trunc"})]


def _div_errors(rng: np.random.Generator) -> list[ErrorCase]:
    return _mismatch("div")(rng) + [ErrorCase(
        (Arg(_f64((3,), rng)), Arg(_f64((3,), rng))), ArgumentError, "div.*rounding_mode",
        {"rounding_mode": "ceil"})] + _integer_division_by_zero(
            "div", {"rounding_mode": "trunc"})(rng)


def _integer_division_by_zero(name: str, kwargs: Mapping[str, Any] | None = None) -> ErrorFn:
    """Integer division by a zero (a tensor holding one, or the number 0): NumPy returns 0;
    pullback raises, as PyTorch ("ZeroDivisionError")."""
    def errors(rng: np.random.Generator) -> list[ErrorCase]:
        ints = np.dtype(np.int64)
        x, y = values((3,), ints, rng, low=1, high=9), np.array([2, 0, 3])
        return [ErrorCase((Arg(x), Arg(y)), DivisionByZeroError,
                          rf"{name}: integer division by zero \(divisor of shape \(3,\) int64 "
                          r"holds 0\)", dict(kwargs or {}), "integer-by-zero"),
                ErrorCase((Arg(x), 0), DivisionByZeroError,
                          rf"{name}: integer division by zero \(divisor 0\)", dict(kwargs or {}),
                          "integer-by-zero")]

    return errors


def _division_errors(name: str) -> ErrorFn:
    return lambda rng: _mismatch(name)(rng) + _integer_division_by_zero(name)(rng)


def _pow_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    if not is_floating(dtype):
        base, exponent = maker(values, dtype, rng, low=-3, high=3), maker(values, dtype, rng, low=0, high=3)
        return binary_samples(base, exponent) + [Sample((Arg(base((2, 3))), 2))]
    base = maker(positive, dtype, rng)
    exponent = maker(values, dtype, rng, low=-2.0, high=2.0)
    samples = binary_samples(base, exponent)
    signed = Arg(maker(nonzero, dtype, rng)((2, 3)))
    samples += [Sample((signed, k)) for k in (2, 3, -1)]  # integer exponents: any base is fine
    samples += [Sample((Arg(base((2, 3))), k)) for k in (0.5, -1.5, 0)]
    samples.append(Sample((2.0, Arg(exponent((2, 3))))))
    samples.append(Sample((Arg(exact([0.0, 0.0, 1.5], dtype)), Arg(exact([2.5, 0.0, 0.5], dtype))),
                          label="zero-base", gradcheck=False))
    samples.append(Sample((0.0, Arg(exact([2.5, 1.0, 0.5], dtype))), label="zero-base",
                          gradcheck=False))
    return samples


def _pow_errors(rng: np.random.Generator) -> list[ErrorCase]:
    return _mismatch("pow")(rng) + [ErrorCase(
        (Arg(_i64((3,), rng)), -1), ValueError, "pow.*negative integer powers",
        label="int-negative-power")]


def _equal_in_places(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    x = exact([1, 0, 1, 0], dtype)
    return [Sample((Arg(x), Arg(exact([1, 1, 0, 0], dtype))), label="equal-in-places")]


def _shift_counts(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    return values(shape, dtype, rng, 0, 5)


def _wide_shifts(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    """Shifts by the bit width and more, and negative values: 0 or -1, as in PyTorch."""
    bits = dtype.itemsize * 8
    x = exact([-5, 3, 100], dtype)
    return [Sample((Arg(x), Arg(exact([bits - 1, bits, bits + 3], dtype))), label="wide")]


_FLOAT_DIVISION_NOTE = "Division by a nonzero divisor (both frameworks give inf/nan at zero)."

BINARY = [
    _binary("add", dtypes=ALL, extra=(_with_alpha,)),
    _binary("sub", dtypes=FLOATS + INTS, extra=(_with_alpha,),
            errors=lambda rng: _mismatch("sub")(rng) + [ErrorCase(
                (Arg(values((3,), _BOOL, rng)), Arg(values((3,), _BOOL, rng))), DTypeError,
                "sub.*bool", label="bool-subtraction")]),
    _binary("mul", dtypes=ALL),
    _binary("div", dtypes=FLOATS + INTS, extra=(_rounding_modes,), errors=_div_errors,
            ops=("div", "div_rounded"), note=_FLOAT_DIVISION_NOTE),
    _binary("floor_divide", dtypes=FLOATS + INTS, differentiable=False,
            errors=_division_errors("floor_divide"),
            note=_FLOAT_DIVISION_NOTE + " No derivative: a backward through it raises, as in "
            "PyTorch."),
    _binary("remainder", dtypes=FLOATS + INTS, note=_FLOAT_DIVISION_NOTE,
            errors=_division_errors("remainder")),
    _binary("fmod", dtypes=FLOATS + INTS, note=_FLOAT_DIVISION_NOTE,
            errors=_division_errors("fmod")),
    _binary("maximum", dtypes=ALL, extra=(_ties, _nan_propagation)),
    _binary("minimum", dtypes=ALL, extra=(_ties, _nan_propagation)),
    *[_binary(name, dtypes=ALL, make_x=values, ops=(op,), differentiable=False,
              torch=(lambda short: lambda t: _torch.binary(t, getattr(t, short)))(name),
              extra=(_equal_in_places,))
      for name, op in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                       ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"))],
    *[_binary(name, dtypes=ALL, make_x=values, differentiable=False)
      for name in ("logical_and", "logical_or", "logical_xor")],
    *[_binary(name, dtypes=INTS + ("bool",), make_x=values, differentiable=False,
              errors=_float_operands(name, 2))
      for name in ("bitwise_and", "bitwise_or", "bitwise_xor")],
    *[_binary(name, dtypes=INTS, make_x=values, make_y=_shift_counts, differentiable=False,
              errors=_float_operands(name, 2), extra=(_wide_shifts,))
      for name in ("bitwise_left_shift", "bitwise_right_shift")],
]

POW = OpRecord(
    name="pow", fn=pb.pow, torch=lambda t: t.pow, ops=("pow",), dtypes=FLOATS + INTS,
    samples=_pow_samples, errors=_pow_errors,
    note="Tensor and Python-number exponents and bases; a zero base has PyTorch's gradients.",
)


# -- clamp, where -----------------------------------------------------------------------------

def _clamp_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    lo, hi = (-1, 2) if dtype.kind in "iu" else (-0.5, 0.5)
    x = lambda: Arg(mk((2, 3)))  # noqa: E731 - a fresh operand per sample
    samples = [
        Sample((x(),), {"min": lo, "max": hi}),
        Sample((x(),), {"min": lo}),
        Sample((x(),), {"max": hi}),
        Sample((Arg(mk(())),), {"min": lo, "max": hi}),
        Sample((Arg(mk((0, 3))),), {"min": lo, "max": hi}),
        Sample((Arg(mk((3, 4)), "transposed"),), {"min": lo, "max": hi}),
        Sample((x(),), {"min": hi, "max": lo}, label="min-above-max"),
        Sample((x(),), {"min": Arg(mk((3,))), "max": Arg(mk((2, 1)))}, label="tensor-bounds"),
        Sample((x(),), {"min": Arg(mk((3,)))}, label="tensor-min"),
        Sample((x(),), {"max": Arg(mk((1, 3)))}, label="tensor-max"),
        Sample((Arg(exact([-2, -1, 0, 1, 2], dtype)),), {"min": lo, "max": hi * 2},
               label="on-bounds", gradcheck=False),
        Sample((Arg(exact([1, 2, 3], dtype)),),
               {"min": Arg(exact([1, 0, 0], dtype)), "max": Arg(exact([2, 2, 3], dtype))},
               label="on-tensor-bounds", gradcheck=False),
    ]
    return samples


def _torch_clamp(t: Any) -> Callable[..., Any]:
    """``torch.clamp`` with a tensor bound and a number bound together (PyTorch wants both
    bounds of one kind)."""

    def call(x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002
        if isinstance(min, t.Tensor) or isinstance(max, t.Tensor):
            min = min if min is None or isinstance(min, t.Tensor) else t.tensor(min, dtype=x.dtype)
            max = max if max is None or isinstance(max, t.Tensor) else t.tensor(max, dtype=x.dtype)
        return t.clamp(x, min=min, max=max)

    return call


def _clamp_errors(rng: np.random.Generator) -> list[ErrorCase]:
    return [ErrorCase((Arg(_f64((3,), rng)),), ArgumentError, "clamp.*min.*max",
                      label="no-bounds")]


CLAMP = OpRecord(
    name="clamp", fn=pb.clamp, torch=_torch_clamp,
    ops=("clamp", "where", "less", "greater"), dtypes=FLOATS + INTS,
    samples=_clamp_samples, errors=_clamp_errors,
    note="Number bounds and tensor bounds (broadcast); on a bound the gradient goes to x, "
    "as in PyTorch.",
)

CLIP = OpRecord(
    name="clip", fn=pb.clip, torch=lambda t: t.clip, ops=("clamp",), dtypes=("float32", "float64"),
    samples=lambda dtype, rng: _clamp_samples(dtype, rng)[:3],
    note="Alias of clamp.",
)


def _where_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(values, dtype, rng)

    def cond(shape: tuple[int, ...]) -> Arg:
        return Arg(values(shape, _BOOL, rng))

    return [
        Sample((cond((2, 3)), Arg(mk((2, 3))), Arg(mk((2, 3))))),
        Sample((cond((2, 1)), Arg(mk((2, 3))), Arg(mk((3,))))),
        Sample((cond((2, 3)), scalar(mk), Arg(mk((2, 3))))),
        Sample((cond((2, 3)), Arg(mk((1, 3))), scalar(mk))),
        Sample((cond(()), Arg(mk(())), Arg(mk(())))),
        Sample((cond((0, 3)), Arg(mk((0, 3))), Arg(mk((3,))))),
        Sample((cond((3, 4)), Arg(mk((3, 4)), "transposed"), Arg(mk((3, 4)), "strided"))),
    ]


def _where_errors(rng: np.random.Generator) -> list[ErrorCase]:
    x = lambda shape: Arg(_f64(shape, rng))  # noqa: E731
    return [
        ErrorCase((x((3,)), x((3,)), x((3,))), DTypeError, "where.*bool", label="float-condition"),
        ErrorCase((Arg(values((2, 3), _BOOL, rng)), x((2, 3)), x((4,))), ShapeError,
                  r"where.*\(4,\)"),
    ]


WHERE = OpRecord(
    name="where", fn=pb.where, torch=lambda t: t.where, ops=("where",), dtypes=ALL,
    samples=_where_samples, errors=_where_errors,
)


# -- casts and copies -------------------------------------------------------------------------

def _cast_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    mk = maker(nonzero, dtype, rng)
    out = [Sample((Arg(mk((2, 3))),), {"dtype": target}) for target in ALL]
    out.append(Sample((Arg(mk((3, 4)), "transposed"),), {"dtype": "float64"}))
    out.append(Sample((Arg(mk(())),), {"dtype": "float32"}))
    # Finite differences need float64 outputs too: other targets are compared with PyTorch only.
    return [s if s.kwargs["dtype"] == "float64" else Sample(s.args, s.kwargs, gradcheck=False)
            for s in out]


def _torch_to(t: Any) -> Callable[..., Any]:
    return lambda x, dtype: x.to(_torch.torch_dtype(t, dtype))


def _cast(x: Any, dtype: str) -> Any:
    return apply(OPS["cast"], x, dtype=to_dtype(dtype))


TO = OpRecord(
    name="Tensor.to", fn=lambda x, dtype: x.to(dtype), torch=_torch_to, ops=("cast",),
    dtypes=ALL, samples=_cast_samples,
    # neither a dtype nor a device: a device error listing both (it said "unknown dtype")
    errors=lambda rng: [ErrorCase((Arg(_f64((3,), rng)), "tpu"), DeviceError,
                                  r"to\(\): 'tpu' is neither a device type \(registered: cpu")],
)

CAST = OpRecord(
    name="op:cast", fn=_cast, torch=_torch_to, ops=("cast",), dtypes=FLOATS, samples=_cast_samples,
    note="The registry op behind Tensor.to(dtype), called directly (also float64 -> float64).",
)


def _copy_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
    return unary_samples(maker(values, dtype, rng))


CLONE = OpRecord(
    name="clone", fn=pb.clone, torch=lambda t: t.clone, ops=("copy",), dtypes=ALL,
    samples=_copy_samples,
)

CONTIGUOUS = OpRecord(
    name="contiguous", fn=pb.contiguous, torch=lambda t: lambda x: x.contiguous(), ops=("copy",),
    dtypes=ALL, samples=_copy_samples,
)


# -- Python operators -------------------------------------------------------------------------

def _operator(symbol: str, fn: Callable[..., Any], ops: Sequence[str], dtypes: Sequence[str], *,
              make_y: Callable[..., np.ndarray] = nonzero, differentiable: bool = True,
              make_x: Callable[..., np.ndarray] = nonzero, number_as_tensor: bool = False,
              ) -> OpRecord:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        # The function records run the whole matrix; here what the operator adds: reflected
        # forms (a number on the left), broadcasting, 0-d.
        mx, my = maker(make_x, dtype, rng), maker(make_y, dtype, rng)
        return [Sample((Arg(mx((2, 3))), Arg(my((3,))))), Sample((Arg(mx((2, 3))), scalar(my))),
                Sample((scalar(mx), Arg(my((2, 3))))), Sample((Arg(mx(())), scalar(my)))]

    # PyTorch has no derivative for some reflected forms (``2.0 % y``): there it gets the
    # number as a 0-d tensor of the same dtype, which promotes alike.
    torch = (lambda t: _torch.binary(t, fn)) if number_as_tensor else (lambda t: fn)
    return OpRecord(name=f"Tensor.{symbol}", fn=fn, torch=torch, ops=tuple(ops),
                    dtypes=tuple(dtypes), samples=samples, differentiable=differentiable,
                    note="The operator, with Python numbers on either side (reflected forms).")


def _unary_operator(symbol: str, fn: Callable[..., Any], ops: Sequence[str],
                    dtypes: Sequence[str], differentiable: bool = True) -> OpRecord:
    def samples(dtype: np.dtype, rng: np.random.Generator) -> list[Sample]:
        return unary_samples(maker(values, dtype, rng))

    return OpRecord(name=f"Tensor.{symbol}", fn=fn, torch=lambda t: fn, ops=tuple(ops),
                    dtypes=tuple(dtypes), samples=samples, differentiable=differentiable)


OPERATORS = [
    _operator("__add__", operator.add, ("add",), ALL),
    _operator("__sub__", operator.sub, ("sub",), FLOATS + INTS),
    _operator("__mul__", operator.mul, ("mul",), ALL),
    _operator("__truediv__", operator.truediv, ("div",), FLOATS),
    _operator("__floordiv__", operator.floordiv, ("floor_divide",), FLOATS + INTS,
              differentiable=False),
    _operator("__mod__", operator.mod, ("remainder",), FLOATS + INTS, number_as_tensor=True),
    *[_operator(f"__{name}__", getattr(operator, name), (op,), INTS, make_x=values,
                make_y=_shift_counts, differentiable=False)
      for name, op in (("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift"))],
    _operator("__pow__", operator.pow, ("pow",), FLOATS, make_x=positive, make_y=values),
    *[_operator(f"__{name}__", getattr(operator, name), (op,), ALL, make_x=values,
                make_y=values, differentiable=False)
      for name, op in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                       ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"))],
    *[_operator(f"__{name}__", fn, (f"logical_{name}", f"bitwise_{name}"), INTS + ("bool",),
                make_x=values, make_y=values, differentiable=False)
      for name, fn in (("and", operator.and_), ("or", operator.or_), ("xor", operator.xor))],
    _unary_operator("__neg__", operator.neg, ("neg",), FLOATS + INTS),
    _unary_operator("__abs__", abs, ("abs",), FLOATS + INTS),
    _unary_operator("__invert__", operator.invert, ("logical_not", "bitwise_not"),
                    INTS + ("bool",), differentiable=False),
]

RECORDS = [*UNARY, *BINARY, POW, CLAMP, CLIP, WHERE, TO, CAST, CLONE, CONTIGUOUS, *OPERATORS]
