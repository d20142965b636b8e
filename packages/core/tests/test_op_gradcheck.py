"""gradcheck and gradgradcheck (float64 central differences) for every differentiable record of
the op database, and tests of the checkers themselves: they must catch wrong first and second
derivatives and say where."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.dispatch import apply
from pullback.errors import DTypeError
from pullback.registry import Op
from pullback.testing import GradcheckError, gradcheck, gradgradcheck
from pullback.testing.opdb import Case, PullbackFactory, sample_cases

CASES = [c for c in sample_cases(dtypes=("float64",))
         if c.record.differentiable and c.sample.gradcheck and c.sample.has_grad_inputs]


def _checked(case: Case, check) -> bool:  # type: ignore[no-untyped-def]
    bound = case.sample.bind(PullbackFactory())
    return check(lambda *leaves: bound.call(case.record.fn, leaves), bound.leaves)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradcheck_and_gradgradcheck(case: Case) -> None:
    # One item for both orders (the message says which failed): half the items to collect.
    assert _checked(case, gradcheck)
    assert _checked(case, gradgradcheck)


# -- the checkers themselves ------------------------------------------------------------------

def _op(name: str, grad_rule) -> Op:  # type: ignore[no-untyped-def]
    """A throw-away op computing x**3 with the given grad rule (never registered)."""
    op = Op(name, lambda xp: lambda x: x * x * x)
    op.def_grad(grad_rule)
    return op


def _x(shape: tuple[int, ...] = (2, 3)) -> pb.Tensor:
    return pb.tensor(np.random.default_rng(0).uniform(0.5, 1.5, shape), dtype=pb.float64,
                     requires_grad=True)


def test_a_correct_rule_passes_both_checks() -> None:
    cube = _op("test.cube", lambda F, g, out, x: (g * 3.0 * x * x,))
    assert gradcheck(lambda t: apply(cube, t), (_x(),))
    assert gradgradcheck(lambda t: apply(cube, t), (_x(),))


def test_a_wrong_first_derivative_is_caught_and_located() -> None:
    # Wrong in one element only: the message must point at it.
    bump = np.zeros((2, 3))
    bump[1, 2] = 1.0

    def rule(F, g, out, x):  # type: ignore[no-untyped-def]
        return (g * 3.0 * x * x + g * bump,)

    wrong = _op("test.cube_wrong", rule)
    with pytest.raises(GradcheckError, match=r"input 0 \(shape \(2, 3\)\) element \(1, 2\) -> "
                                             r"output 0 element \(1, 2\)") as info:
        gradcheck(lambda t: apply(wrong, t), (_x(),))
    assert "1 of 36 entries" in str(info.value)
    assert gradcheck(lambda t: apply(wrong, t), (_x(),), raise_exception=False) is False


def test_a_wrong_second_derivative_is_caught_by_gradgradcheck_only() -> None:
    # Right values, but under create_graph the rule is cut from x: d2/dx2 comes out 0, not 6x.
    def rule(F, g, out, x):  # type: ignore[no-untyped-def]
        slope = x * x * 3.0
        return (g * (slope.detach() if F.differentiable else slope),)

    cut = _op("test.cube_cut", rule)
    assert gradcheck(lambda t: apply(cut, t), (_x(),))
    with pytest.raises(GradcheckError, match=r"gradgradcheck failed: input 0"):
        gradgradcheck(lambda t: apply(cut, t), (_x(),))


def test_second_order_is_checked_against_the_grad_outputs_too() -> None:
    # Under create_graph the rule cuts the incoming gradient g from the graph: first order is
    # right, but d(vjp)/d(grad_outputs) comes out 0 instead of 3x^2.
    def rule(F, g, out, x):  # type: ignore[no-untyped-def]
        return ((g.detach() if F.differentiable else g) * 3.0 * x * x,)

    cut = _op("test.cube_cut_g", rule)
    assert gradcheck(lambda t: apply(cut, t), (_x(),))
    with pytest.raises(GradcheckError, match=r"gradgradcheck failed: grad_outputs\[0\]"):
        gradgradcheck(lambda t: apply(cut, t), (_x(),))


def test_several_inputs_and_outputs_and_non_float_outputs() -> None:
    x, y = _x((3, 4)), _x((4,))
    assert gradcheck(lambda a, b: ((a * b).sum(axis=0), a.max(axis=1)), (x, y))
    assert gradgradcheck(lambda a, b: pb.split(a * b, 2, axis=1), (x, y))


def test_inputs_must_be_float64() -> None:
    x = pb.tensor([1.0, 2.0], dtype=pb.float32, requires_grad=True)
    with pytest.raises(DTypeError, match="input 0 is float32.*float64"):
        gradcheck(lambda t: t * t, (x,))


def test_something_must_require_grad() -> None:
    with pytest.raises(GradcheckError, match="no input requires grad"):
        gradcheck(lambda t: t * t, (pb.tensor([1.0], dtype=pb.float64),))
