"""Quantifiers over named variables, and the satisfaction of a knowledge base.

``forall(x, phi)`` aggregates phi's axis of variable ``x`` (LTN's default aggregator: the
p-mean error with p = 2); ``exists`` likewise (the p-mean, p = 2). Masks make guarded
quantifiers: ``forall(x, phi, mask=guard)`` aggregates only where the guard holds.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pullback
from pullback import Tensor
from pullback.errors import ShapeError

from . import fuzzy
from ._grounding import _batched_inputs
from ._logic import LogicTensor, Term, Variable, as_logic, expand_to

AGGREGATORS: dict[str, Any] = {
    "mean": fuzzy.AggregMean, "pmean": fuzzy.AggregPMean, "pmean_error": fuzzy.AggregPMeanError,
    "min": fuzzy.AggregMin, "max": fuzzy.AggregMax, "softmin": fuzzy.AggregSoftMin,
    "logsumexp": fuzzy.AggregLogSumExp,
}


def aggregator(agg: Any, **options: Any) -> Any:
    """An aggregator object from a name (with its options) or an object."""
    if not isinstance(agg, str):
        if options:
            raise TypeError("aggregator options apply to a named aggregator only")
        return agg
    if agg not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {agg!r} (known: {', '.join(sorted(AGGREGATORS))})")
    return AGGREGATORS[agg](**options)


def _labels(variables: Any) -> list[str]:
    variables = [variables] if isinstance(variables, (Variable, str)) else list(variables)
    labels = []
    for v in variables:
        label = v if isinstance(v, str) else v.free_vars[0] if isinstance(v, Term) else None
        if label is None:
            raise TypeError(f"quantify over Variables (or their labels), got {type(v).__name__}")
        if label not in labels:
            labels.append(label)
    return labels


def _mask(formula: LogicTensor, mask: Any, cond_vars: Sequence[Variable] | None,
          cond_fn: Callable[..., Tensor] | None) -> Tensor | None:
    """A bool Tensor of the formula's shape: the guard, from ``mask`` or LTN's
    ``cond_vars``/``cond_fn``."""
    if mask is None and cond_fn is None:
        return None
    if mask is not None and cond_fn is not None:
        raise ValueError("give either mask= or cond_vars=/cond_fn=, not both")
    if cond_fn is not None:
        if not cond_vars:
            raise ValueError("cond_fn needs cond_vars, the variables it reads")
        inputs, sizes = _batched_inputs(tuple(cond_vars))
        flat = cond_fn(*inputs)
        mask = LogicTensor._new(flat.reshape(*sizes.values()).to(pullback.bool_), tuple(sizes),
                                formula.semantics)
    if isinstance(mask, LogicTensor):
        values, free = mask.values, mask.free_vars
    elif isinstance(mask, Tensor) and mask.ndim == 0:
        values, free = mask, ()
    else:
        raise TypeError("mask must be a LogicTensor (a guard over the formula's variables)")
    unknown = [v for v in free if v not in formula.free_vars]
    if unknown:
        raise ValueError(f"the guard is over variables {unknown} that the formula does not have "
                         f"(it has {list(formula.free_vars)})")
    values = values.to(pullback.bool_) if values.dtype.kind != "b" else values
    return pullback.broadcast_to(expand_to(values, free, formula.free_vars), formula.shape)


def quantify(variables: Any, formula: LogicTensor, agg: Any, mask: Any = None,
             cond_vars: Sequence[Variable] | None = None,
             cond_fn: Callable[..., Tensor] | None = None) -> LogicTensor:
    """Aggregate ``formula`` over ``variables`` with ``agg`` (an aggregator object)."""
    if not isinstance(formula, LogicTensor):
        raise TypeError(f"quantifiers take a LogicTensor formula, got {type(formula).__name__}")
    labels = _labels(variables)
    missing = [v for v in labels if v not in formula.free_vars]
    if missing:
        raise ValueError(f"cannot quantify over {missing}: the formula's free variables are "
                         f"{list(formula.free_vars)}")
    axes = tuple(formula.free_vars.index(v) for v in labels)
    guard = _mask(formula, mask, cond_vars, cond_fn)
    values = agg(formula.values, axes, mask=guard)
    rest = tuple(v for v in formula.free_vars if v not in labels)
    return LogicTensor._new(values, rest, formula.semantics)


def forall(variables: Any, formula: LogicTensor, agg: Any = "pmean_error", *, mask: Any = None,
           cond_vars: Sequence[Variable] | None = None,
           cond_fn: Callable[..., Tensor] | None = None, **options: Any) -> LogicTensor:
    """The universal quantifier over ``variables`` (a Variable, a label, or several).

    Args:
        agg: an aggregator name (``"pmean_error"``, LTN's default, with ``p=2``; ``"min"``,
            ``"mean"``, ``"softmin"``, ``"logsumexp"``, ...) or object; options such as ``p``
            or ``temperature`` are passed to a named one.
        mask: a guard (a LogicTensor of bools over some of the formula's variables).
        cond_vars, cond_fn: LTN's form of the guard, ``cond_fn(*cond_vars' individuals)``.
    """
    if agg == "pmean_error" and "p" not in options:
        options["p"] = 2
    if agg == "logsumexp":
        options.setdefault("sign", -1)
    return quantify(variables, formula, aggregator(agg, **options), mask, cond_vars, cond_fn)


def exists(variables: Any, formula: LogicTensor, agg: Any = "pmean", *, mask: Any = None,
           cond_vars: Sequence[Variable] | None = None,
           cond_fn: Callable[..., Tensor] | None = None, **options: Any) -> LogicTensor:
    """The existential quantifier (LTN's default aggregator: the p-mean with p = 2); arguments
    as :func:`forall`."""
    if agg == "pmean" and "p" not in options:
        options["p"] = 2
    if agg == "logsumexp":
        options.setdefault("sign", 1)
    return quantify(variables, formula, aggregator(agg, **options), mask, cond_vars, cond_fn)


def sat_agg(*formulas: Any, agg: Any = None) -> Tensor:
    """The satisfaction of a knowledge base: closed formulas (no free variables, or 0-d truth
    values) aggregated by ``agg`` (default: the p-mean error, p = 2, as LTN's SatAgg)."""
    if not formulas:
        raise ValueError("sat_agg: give at least one formula")
    values = []
    for f in formulas:
        f = f if isinstance(f, LogicTensor) else as_logic(f, _first_semantics(formulas))
        if f.free_vars:
            raise ShapeError(f"sat_agg: every formula must be closed; one has free variables "
                             f"{list(f.free_vars)} (quantify them first)")
        values.append(f.values)
    agg = fuzzy.AggregPMeanError(p=2) if agg is None else aggregator(agg)
    return agg(pullback.stack(values), 0)


def _first_semantics(formulas: Sequence[Any]) -> Any:
    from .semantics import resolve

    for f in formulas:
        if isinstance(f, LogicTensor):
            return f.semantics
    return resolve("product")
