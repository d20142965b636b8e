"""Type promotion against PyTorch: every pair of supported dtypes, as tensors, 0-d tensors and
Python numbers, through the representative ops; result_type/promote_types/can_cast; the
in-place rule; and the cases that were wrong under NumPy's promotion."""

# ruff: noqa: B023 - the lambdas made in loops here are called at once, inside the loop

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb
from pullback.promotion import _PLANS

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")
# (left form, right form): a tensor with dims, a 0-d tensor, a Python number.
FORMS = (("tensor", "tensor"), ("tensor", "0-d"), ("0-d", "tensor"), ("0-d", "0-d"),
         ("tensor", "number"), ("number", "tensor"), ("0-d", "number"))
_TOLERANCE = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}
_LEFT = {"b": [True, False, True], "i": [1, 2, 3], "f": [1.5, 2.0, 3.25]}
_RIGHT = {"b": [True, True, True], "i": [2, 1, 3], "f": [0.75, 2.5, 1.25]}  # no zero divisors
_NUMBER = {"b": True, "i": 2, "f": 1.5}


def _kind(name: str) -> str:
    return "b" if name == "bool" else "i" if "int" in name else "f"


def _make(values: list[Any], dtype: str, form: str) -> tuple[Any, Any]:
    """The operand in pullback and in PyTorch."""
    if form == "number":
        return values, values
    data = values if form == "tensor" else values[0]
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    p = pb.tensor(t.float().numpy() if dtype == "bfloat16" else t.numpy(), dtype=dtype)
    return p, t


def _operands(da: str, db: str, forms: tuple[str, str]) -> tuple[list[Any], list[Any]]:
    left = _NUMBER[_kind(da)] if forms[0] == "number" else _LEFT[_kind(da)]
    right = _NUMBER[_kind(db)] if forms[1] == "number" else _RIGHT[_kind(db)]
    (pa, ta), (pb_, tb) = _make(left, da, forms[0]), _make(right, db, forms[1])
    return [pa, pb_], [ta, tb]


def _host(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return np.asarray(t.float() if t.dtype == pb.bfloat16 else t)


def _outcome(fn: Callable[..., Any], args: list[Any]) -> Any:
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - the class is compared with PyTorch's
        return exc


def _compare(what: str, ours: Any, theirs: Any) -> str | None:
    if isinstance(theirs, Exception):
        if isinstance(ours, Exception):
            return None
        return f"{what}: PyTorch raises {type(theirs).__name__}, pullback gives {ours.dtype}"
    if isinstance(ours, Exception):
        return f"{what}: pullback raises {type(ours).__name__}: {ours}"
    expected = str(theirs.dtype).removeprefix("torch.")
    if str(ours.dtype) != expected:
        return f"{what}: dtype {ours.dtype}, PyTorch {expected}"
    a, e = _host(ours).astype(np.float64), _host(theirs).astype(np.float64)
    if a.shape != e.shape:
        return f"{what}: shape {a.shape}, PyTorch {e.shape}"
    rtol = _TOLERANCE.get(expected, 0.0)
    if not np.allclose(a, e, rtol=rtol, atol=rtol, equal_nan=True):
        return f"{what}: values {a.tolist()}, PyTorch {e.tolist()}"
    return None


BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (operator.add, operator.add),
    "mul": (operator.mul, operator.mul),
    "true div": (operator.truediv, operator.truediv),
    "floor div": (operator.floordiv, operator.floordiv),
    "div trunc": (lambda a, b: pb.div(a, b, rounding_mode="trunc"),
                  lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    "div floor": (lambda a, b: pb.div(a, b, rounding_mode="floor"),
                  lambda a, b: torch.div(a, b, rounding_mode="floor")),
    "pow": (operator.pow, operator.pow),
    "lt": (operator.lt, operator.lt),
    "eq": (operator.eq, operator.eq),
    "maximum": (lambda a, b: pb.maximum(a, b), lambda a, b: torch.maximum(a, b)),
}


def _binary_pair(name: str, da: str, db: str, forms: tuple[str, str]) -> str | None:
    ours_fn, theirs_fn = BINARY[name]
    if name == "maximum" and "number" in forms:
        return None  # torch.maximum takes tensors only
    ours_args, theirs_args = _operands(da, db, forms)
    return _compare(f"{da} {forms[0]} {name} {db} {forms[1]}", _outcome(ours_fn, ours_args),
                    _outcome(theirs_fn, theirs_args))


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_ops_promote_as_pytorch(name: str) -> None:
    problems = [p for da, db in itertools.product(DTYPES, DTYPES) for forms in FORMS
                if (p := _binary_pair(name, da, db, forms)) is not None]
    assert problems == [], f"{len(problems)} cases differ:\n" + "\n".join(problems[:40])


def test_where_promotes_its_two_branches_as_pytorch() -> None:
    problems = []
    for da, db in itertools.product(DTYPES, DTYPES):
        for forms in FORMS:
            (pa, pb_), (ta, tb) = _operands(da, db, forms)
            cond = [True, False, True] if "tensor" in forms else True
            ours = _outcome(pb.where, [pb.tensor(cond), pa, pb_])
            theirs = _outcome(torch.where, [torch.tensor(cond), ta, tb])
            problems.append(_compare(f"where({da} {forms[0]}, {db} {forms[1]})", ours, theirs))
    problems = [p for p in problems if p]
    assert problems == [], "\n".join(problems[:40])


UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "exp": (pb.exp, torch.exp),
    "sum": (pb.sum, torch.sum),
    "mean": (pb.mean, lambda t: torch.mean(t if t.is_floating_point() else
                                           t.to(torch.get_default_dtype()))),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ops_give_pytorchs_dtype(name: str) -> None:
    # mean: PyTorch refuses integer tensors; pullback gives the default dtype, as for exp (the
    # reference is PyTorch's mean of the input cast to it; see docs/semantics.md).
    ours_fn, theirs_fn = UNARY[name]
    problems = []
    for dtype in DTYPES:
        for form in ("tensor", "0-d"):
            p, t = _make(_LEFT[_kind(dtype)], dtype, form)
            problems.append(_compare(f"{name}({dtype} {form})", _outcome(ours_fn, [p]),
                                     _outcome(theirs_fn, [t])))
    problems = [p for p in problems if p]
    assert problems == [], "\n".join(problems)


def test_matmul_and_cat_promote_or_refuse_as_pytorch() -> None:
    problems = []
    for da, db in itertools.product(DTYPES, DTYPES):
        (pa, pb_), (ta, tb) = _operands(da, db, ("tensor", "tensor"))
        problems.append(_compare(f"cat({da}, {db})", _outcome(lambda a, b: pb.cat([a, b]), [pa, pb_]),
                                 _outcome(lambda a, b: torch.cat([a, b]), [ta, tb])))
        if "bool" in (da, db):
            continue  # PyTorch has no bool matmul; NumPy's is logical (documented)
        problems.append(_compare(f"matmul({da}, {db})", _outcome(operator.matmul, [pa, pb_]),
                                 _outcome(operator.matmul, [ta, tb])))
    problems = [p for p in problems if p]
    assert problems == [], "\n".join(problems[:40])


def test_clamp_promotes_the_tensor_with_its_bounds() -> None:
    problems = []
    for da, db in itertools.product(DTYPES, DTYPES):
        if da == "bool":
            continue  # PyTorch's clamp has no bool kernel
        for form in ("0-d", "number"):
            (pa, pb_), (ta, tb) = _operands(da, db, ("tensor", form))
            problems.append(_compare(f"clamp({da}, min={db} {form})",
                                     _outcome(lambda x, m: pb.clamp(x, min=m), [pa, pb_]),
                                     _outcome(lambda x, m: torch.clamp(x, min=m), [ta, tb])))
    problems = [p for p in problems if p]
    assert problems == [], "\n".join(problems[:40])


# -- the public functions -----------------------------------------------------------------

_ALL = DTYPES + ("complex64", "complex128")


def _pb_dtype(name: str) -> Any:
    return pb.bfloat16 if name == "bfloat16" else np.dtype(name)


@pytest.mark.parametrize("a", _ALL)
def test_promote_types_and_can_cast_match_pytorch(a: str) -> None:
    for b in _ALL:
        expected = str(torch.promote_types(getattr(torch, a), getattr(torch, b)))
        if expected != "torch.complex32":  # NumPy has no complex32 (documented)
            assert f"torch.{pb.promote_types(_pb_dtype(a), _pb_dtype(b))}" == expected, (a, b)
        assert pb.can_cast(_pb_dtype(a), _pb_dtype(b)) == torch.can_cast(
            getattr(torch, a), getattr(torch, b)), (a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_result_type_matches_pytorch(dtype: str) -> None:
    for other, forms in itertools.product(DTYPES, FORMS):
        (pa, pb_), (ta, tb) = _operands(dtype, other, forms)
        expected = str(torch.result_type(ta, tb)).removeprefix("torch.") \
            if any(isinstance(t, torch.Tensor) for t in (ta, tb)) else None
        if expected:
            assert str(pb.result_type(pa, pb_)) == expected, (dtype, other, forms)


def test_result_type_follows_the_default_dtype() -> None:
    x = pb.tensor([1, 2], dtype=pb.int32)
    pb.set_default_dtype(pb.float64)
    try:
        assert pb.result_type(x, 0.5) == pb.float64
        assert (x / x).dtype == pb.float64 and x.exp().dtype == pb.float64
    finally:
        pb.set_default_dtype(pb.float32)
    assert (x / x).dtype == pb.float32


# -- the cases the issue lists -----------------------------------------------------------

def test_the_cases_that_numpy_promotion_got_wrong() -> None:
    i32 = pb.tensor([1, 2, 3], dtype=pb.int32)
    t32 = torch.tensor([1, 2, 3], dtype=torch.int32)
    cases = [
        (i32 + 0.5, t32 + 0.5), (i32 / i32, t32 / t32), (i32.exp(), t32.exp()),
        (0.7 ** i32, 0.7 ** t32), (pb.tensor([1.0, 2.0]) + pb.tensor(3), torch.tensor([1.0, 2.0])
                                   + torch.tensor(3)),
        (pb.exp(pb.tensor([1, 2], dtype=pb.int8)), torch.exp(torch.tensor([1, 2], dtype=torch.int8))),
        (pb.sigmoid(i32), torch.sigmoid(t32)), (pb.clamp(i32, min=2.5), torch.clamp(t32, min=2.5)),
        (pb.tensor([1.0]) + pb.tensor(2.0, dtype=pb.float64),
         torch.tensor([1.0]) + torch.tensor(2.0, dtype=torch.float64)),
        (i32 + pb.tensor(5), t32 + torch.tensor(5)),
    ]
    for ours, theirs in cases:
        assert _compare("case", ours, theirs) is None, (ours, theirs)


def test_out_of_range_python_ints_wrap_as_in_pytorch() -> None:
    for dtype in ("int8", "uint8", "int16", "int32"):
        values = [1, 2, 100] if dtype != "uint8" else [1, 2, 200]
        p, t = pb.tensor(values, dtype=dtype), torch.tensor(values, dtype=getattr(torch, dtype))
        for number in (1000, -129, 2**40, -1, 2**63 + 5):
            for op in (operator.add, operator.and_, operator.or_, operator.xor, operator.mul):
                assert _compare(f"{dtype} {op.__name__} {number}", _outcome(op, [p, number]),
                                _outcome(op, [t, number])) is None
    with pytest.raises(OverflowError):
        pb.tensor([1], dtype=pb.int8) + 2**70


def test_comparisons_with_out_of_range_ints_are_exact() -> None:
    # A documented difference (docs/semantics.md): PyTorch wraps 1000 to -24 first, so an int8
    # tensor is never "< 1000"; pullback compares the values, as NumPy and Python do.
    x = pb.tensor([1, 2, 100], dtype=pb.int8)
    assert (x < 1000).tolist() == [True, True, True]
    assert (x == 1000).tolist() == [False, False, False]


def test_in_place_ops_refuse_a_wider_kind_and_store_a_narrower_size() -> None:
    cases = [("int32", lambda x: x.add_(0.5)), ("int32", lambda x: x.div_(2)),
             ("int32", lambda x: x.exp_()), ("bool", lambda x: x.add_(1)),
             ("int32", lambda x: x.mul_(True)), ("float32", lambda x: x.add_(x.double())),
             ("int32", lambda x: x.add_(x.long())), ("float16", lambda x: x.mul_(2.5))]
    for dtype, fn in cases:
        p = pb.tensor([1, 2, 3], dtype=dtype)
        t = torch.tensor([1, 2, 3], dtype=getattr(torch, dtype))
        ours, theirs = _outcome(fn, [p]), _outcome(fn, [t])
        assert _compare(f"{dtype} in place", ours, theirs) is None
        if isinstance(theirs, Exception):
            assert isinstance(ours, pb.DTypeError) and isinstance(ours, RuntimeError)
            assert "can't be cast" in str(ours)


def test_in_place_update_of_a_graph_tensor_casts_back() -> None:
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    x = w * 1.0
    x.add_(pb.tensor([0.5, 0.5], dtype=pb.float64))  # recorded; float64 result stored as float32
    assert x.dtype == pb.float32
    x.sum().backward()
    assert w.grad.dtype == pb.float32 and w.grad.tolist() == [1.0, 1.0]


def test_nn_fused_ops_follow_the_rules() -> None:
    nn = pytest.importorskip("pullback.nn")
    F = nn.functional
    ints = pb.tensor([[1, 2, 3]], dtype=pb.int32)
    assert F.softmax(ints, dim=-1).dtype == pb.float32
    with pytest.raises(pb.DTypeError, match="nn.linear.*float32.*float64"):
        F.linear(pb.ones(2, 3), pb.ones(4, 3, dtype=pb.float64))
    with pytest.raises(RuntimeError):  # PyTorch raises RuntimeError here too
        torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3, dtype=torch.float64))


def test_promotion_is_decided_once_per_signature_not_per_call() -> None:
    _PLANS.clear()
    x = pb.tensor(np.arange(1, 1001, dtype=np.int32))
    for _ in range(50):
        x + 0.5
        x / x
    assert len(_PLANS) == 2
    y = pb.tensor(np.ones(4, np.float32))
    for _ in range(50):  # one dtype throughout: no decision to make at all
        (y * y + 0.5).tanh()
    assert len(_PLANS) == 2
