"""replace_pattern: the same rewrites under torch.fx and pullback.fx give the same matches and
the same code, and the rewritten module computes the replacement."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from fx_oracle import both, same_code

import pullback
from pullback.fx import replace_pattern, symbolic_trace


def two_occurrences(t: Any) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    def program(x, w1, w2):
        m1 = t.lib.cat([t.lib.neg(w1), w2]).sum()
        m2 = t.lib.cat([t.lib.neg(w1), w2]).sum()
        return x + t.lib.max(m1) + t.lib.max(m2)

    def pattern(a1, a2):
        return t.lib.cat([t.lib.neg(a1), a2]).sum()

    def replacement(a1, a2):
        return t.lib.stack([a1, a2])

    return program, pattern, replacement


def inner_value_read_outside(t: Any) -> tuple[Callable[..., Any], ...]:
    def program(x):
        y = t.lib.relu(x)
        z = t.lib.sigmoid(y)
        return z + y  # y is read outside the match: no replacement

    def pattern(a):
        return t.lib.sigmoid(t.lib.relu(a))

    def replacement(a):
        return t.lib.tanh(a)

    return program, pattern, replacement


def literal_arguments(t: Any) -> tuple[Callable[..., Any], ...]:
    def program(x):
        return (x * 2 + 1) + (x * 3 + 1) + (x * 2 + 1).relu()

    def pattern(a):
        return a * 2 + 1  # matches only where the literals are 2 and 1

    def replacement(a):
        return t.lib.add(a, a) + 1

    return program, pattern, replacement


def method_and_kwargs(t: Any) -> tuple[Callable[..., Any], ...]:
    def program(x, y):
        return x.sum(dim=1).exp() + y.sum(dim=0).exp() + x.sum(dim=1)

    def pattern(a):
        return a.sum(dim=1).exp()

    def replacement(a):
        return a.sum(dim=1).sigmoid()

    return program, pattern, replacement


CASES = [two_occurrences, inner_value_read_outside, literal_arguments, method_and_kwargs]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_the_rewrite_is_torchs(case: Callable[[Any], tuple[Callable[..., Any], ...]]) -> None:
    torch_side, ours = both()
    their_gm = torch_side.fx.symbolic_trace(case(torch_side)[0])
    their_matches = torch_side.fx.replace_pattern(their_gm, *case(torch_side)[1:])
    program, pattern, replacement = case(ours)
    gm = symbolic_trace(program)
    matches = replace_pattern(gm, pattern, replacement)
    assert len(matches) == len(their_matches)
    assert [m.anchor.name for m in matches] == [m.anchor.name for m in their_matches]
    same_code(their_gm.code, gm.code)
    gm.graph.lint()


def test_the_rewritten_module_computes_the_replacement() -> None:
    program, pattern, replacement = two_occurrences(_pullback())
    gm = symbolic_trace(program)
    replace_pattern(gm, pattern, replacement)
    x, w1, w2 = (pullback.tensor(v) for v in ([1.0, 2.0], [3.0, -4.0], [0.5, 6.0]))
    stacked = pullback.stack([w1, w2])
    expected = x + pullback.max(stacked) + pullback.max(stacked)
    assert np.array_equal(gm(x, w1, w2).numpy(), expected.numpy())


def test_pattern_and_replacement_must_agree_on_inputs() -> None:
    gm = symbolic_trace(lambda x: pullback.relu(x))
    with pytest.raises(ValueError, match="takes 1 inputs, the replacement 2"):
        replace_pattern(gm, lambda a: pullback.relu(a), lambda a, b: a + b)


def _pullback() -> Any:
    from fx_oracle import PULLBACK

    return PULLBACK
