"""Axioms as ready-made formulas: each returns the closed formula's truth (a 0-d LogicTensor),
so ``1 - axiom(...).values`` is a loss term. Relations are binary predicates, ``R(x, y)``;
``x``, ``y``, ``z`` are Variables over the same individuals (under different labels).

Quantifier options (``agg``, ``p``, ``temperature``...) are passed on to :func:`forall`.
"""

from __future__ import annotations

from typing import Any, Sequence

from ._logic import LogicTensor, Variable
from ._quantifiers import forall
from .semantics import resolve


def _renamed(x: Variable, label: str) -> Variable:
    """The individuals of ``x`` under another label (a second, independent variable)."""
    return Variable(label, x.value)


def transitivity(relation: Any, x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall a, b, c: R(a, b) & R(b, c) >> R(a, c)`` over the individuals of ``x``."""
    a, b, c = (_renamed(x, f"{x.label}_{k}") for k in "abc")
    return forall([a, b, c], (relation(a, b) & relation(b, c)) >> relation(a, c), **quantifier)


def symmetry(relation: Any, x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall a, b: R(a, b) >> R(b, a)``."""
    a, b = (_renamed(x, f"{x.label}_{k}") for k in "ab")
    return forall([a, b], relation(a, b) >> relation(b, a), **quantifier)


def asymmetry(relation: Any, x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall a, b: R(a, b) >> ~R(b, a)``."""
    a, b = (_renamed(x, f"{x.label}_{k}") for k in "ab")
    return forall([a, b], relation(a, b) >> ~relation(b, a), **quantifier)


def reflexivity(relation: Any, x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall a: R(a, a)`` (one variable in both places: the diagonal)."""
    return forall(x, relation(x, x), **quantifier)


def irreflexivity(relation: Any, x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall a: ~R(a, a)``."""
    return forall(x, ~relation(x, x), **quantifier)


def implication(antecedent: Any, consequent: Any, x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall x: P(x) >> Q(x)`` between two predicates."""
    return forall(x, antecedent(x) >> consequent(x), **quantifier)


def mutual_exclusion(predicates: Sequence[Any], x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall x: ~(P_i(x) & P_j(x))`` for every pair i < j, joined by the semantics' and."""
    truths = [p(x) for p in predicates]
    if len(truths) < 2:
        raise ValueError("mutual_exclusion: give at least two predicates")
    pairs = [~(truths[i] & truths[j]) for i in range(len(truths)) for j in range(i + 1, len(truths))]
    formula = pairs[0]
    for p in pairs[1:]:
        formula = formula & p
    return forall(x, formula, **quantifier)


def exactly_one(predicates: Sequence[Any], x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall x: (P_1(x) | ... | P_n(x)) & (mutual exclusion)``: every individual satisfies
    exactly one of the predicates."""
    truths = [p(x) for p in predicates]
    if len(truths) < 2:
        raise ValueError("exactly_one: give at least two predicates")
    some = truths[0]
    for t in truths[1:]:
        some = some | t
    formula = some
    for i in range(len(truths)):
        for j in range(i + 1, len(truths)):
            formula = formula & ~(truths[i] & truths[j])
    return forall(x, formula, **quantifier)


def totality(relation: Any, x: Variable, **quantifier: Any) -> LogicTensor:
    """``forall a, b: a != b >> R(a, b) | R(b, a)`` (connexity on distinct individuals; the
    guard compares their features)."""
    a, b = (_renamed(x, f"{x.label}_{k}") for k in "ab")
    distinct = _distinct(a, b)
    return forall([a, b], relation(a, b) | relation(b, a), mask=distinct, **quantifier)


def _distinct(a: Variable, b: Variable) -> LogicTensor:
    """The guard ``a != b`` (some feature differs), a LogicTensor of bools over (a, b); a
    guard's semantics is never used, only its values."""
    fa = a.value.reshape(a.value.shape[0], 1, -1)
    fb = b.value.reshape(1, b.value.shape[0], -1)
    return LogicTensor._new((fa != fb).any(-1), (a.label, b.label), resolve("product"))
