"""Operands that are no Tensor, number or array: Tensor's operators return NotImplemented, so the
other object's reflected operator runs (as in PyTorch), and ops raise a TypeError naming the op.

Each behaviour is compared with PyTorch's on the same objects.
"""

from __future__ import annotations

import decimal
import fractions
import operator
from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb
from pullback.dispatch import apply
from pullback.errors import ArgumentTypeError
from pullback._ops import elementwise

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift",
           "matmul", "and", "or", "xor")
# operator.and_/or_ are spelled with an underscore.
_OPERATOR = {name: getattr(operator, name + "_" if name in ("and", "or") else name)
             for name in _BINARY}


def _reflecting(name: str) -> Any:
    """An object whose only operator is the reflected ``name``, returning its name."""
    cls = type(f"Reflects_{name}", (), {f"__r{name}__": lambda self, other: f"r{name}"})
    return cls()


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc).__name__
    return result if isinstance(result, (str, bool)) else "tensor"


@pytest.mark.parametrize("name", _BINARY)
def test_the_other_objects_reflected_operator_runs_as_in_pytorch(name: str) -> None:
    fn = _OPERATOR[name]
    ours = _outcome(lambda: fn(pb.tensor([1, 2]), _reflecting(name)))
    theirs = _outcome(lambda: fn(torch.tensor([1, 2]), _reflecting(name)))
    assert ours == theirs == f"r{name}"


def test_comparisons_reach_the_other_objects_swapped_comparison_as_in_pytorch() -> None:
    class Compares:
        __hash__ = object.__hash__

        def __lt__(self, other: Any) -> str:
            return "lt"

        def __gt__(self, other: Any) -> str:
            return "gt"

        def __le__(self, other: Any) -> str:
            return "le"

        def __ge__(self, other: Any) -> str:
            return "ge"

        def __eq__(self, other: Any) -> str:  # type: ignore[override]
            return "eq"

        def __ne__(self, other: Any) -> str:  # type: ignore[override]
            return "ne"

    for fn in (operator.lt, operator.gt, operator.le, operator.ge, operator.eq, operator.ne):
        ours = fn(pb.tensor([1.0]), Compares())
        theirs = fn(torch.tensor([1.0]), Compares())
        assert ours == theirs, fn.__name__


def test_in_place_operators_fall_back_to_the_reflected_operator_as_in_pytorch() -> None:
    ours, theirs = pb.tensor([1.0]), torch.tensor([1.0])
    ours += _reflecting("add")
    theirs += _reflecting("add")
    assert ours == theirs == "radd"


_FOREIGN = {"list": [1.0, 2.0], "tuple": (1.0, 2.0), "None": None, "str": "ab",
            "Fraction": fractions.Fraction(1, 2), "Decimal": decimal.Decimal("1.5"),
            "object": object()}


@pytest.mark.parametrize("kind", list(_FOREIGN))
@pytest.mark.parametrize("fn", [operator.add, operator.truediv, operator.pow, operator.lt,
                                operator.eq, operator.ne], ids=lambda f: f.__name__)
def test_unsupported_operands_fail_or_compare_as_in_pytorch(kind: str, fn: Any) -> None:
    # + and < on such operands are TypeErrors, == and != are plain False/True (Python's
    # identity fallback), in both libraries; none is swallowed into an object array.
    ours = _outcome(lambda: fn(pb.tensor([1.0, 2.0]), _FOREIGN[kind]))
    theirs = _outcome(lambda: fn(torch.tensor([1.0, 2.0]), _FOREIGN[kind]))
    if ours != theirs and fn in (operator.add, operator.truediv, operator.pow):
        # PyTorch reads a sequence as a repeat count in a few spellings; both refuse it.
        assert ours == "TypeError" and theirs in ("TypeError", "RuntimeError"), (ours, theirs)
    else:
        assert ours == theirs, (ours, theirs)


@pytest.mark.parametrize("value", [[1, 2], "ab", None.__class__, fractions.Fraction(1, 3)],
                         ids=["list", "str", "class", "Fraction"])
def test_apply_names_the_op_and_the_argument(value: Any) -> None:
    with pytest.raises(ArgumentTypeError, match=r"^mul: argument 1 is a ") as info:
        apply(elementwise.MUL, pb.tensor([1.0, 2.0]), value)
    assert isinstance(info.value, TypeError)
    with pytest.raises(TypeError, match=r"^add: argument 0"):
        pb.add(value, pb.tensor([1.0]))


def test_none_stays_an_absent_optional_input() -> None:
    nnf = pytest.importorskip("pullback.nn.functional", reason="pullback-nn is not installed")
    x, w = pb.randn(2, 3), pb.randn(4, 3)
    assert np.allclose(nnf.linear(x, w, None).numpy(), (x @ w.T).numpy())


def test_numbers_numpy_values_and_tensor_subclasses_stay_operands() -> None:
    nn = pytest.importorskip("pullback.nn", reason="pullback-nn is not installed")
    t = pb.tensor([1.0, 2.0])
    for other in (2, 2.5, True, np.float32(2), np.int64(3), np.array([1.0, 2.0]),
                  nn.Parameter(pb.tensor([1.0, 1.0]))):
        theirs = torch.as_tensor(other.detach().numpy() if isinstance(other, pb.Tensor) else other)
        expected = (torch.tensor([1.0, 2.0]) + theirs).numpy()
        assert np.allclose((t + other).detach().numpy(), expected), type(other)
        assert np.allclose((other + t).detach().numpy(), expected), type(other)
