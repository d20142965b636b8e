"""Fuzzy connectives and aggregators: each a small class, its semantics in ``__call__`` and its
options in ``__init__`` (LTN's shape, so LTNtorch users find the same names).

Truth values are Tensors in [0, 1]. The "stable" product-logic variants move their inputs away
from the points where gradients vanish or explode (LTN's projections ``pi_0``, ``pi_1``, with
``eps = 1e-4``): ``pi_0(x) = (1 - eps) x + eps`` keeps x off 0, ``pi_1(x) = (1 - eps) x`` keeps it
off 1.

The product logic's connectives and the p-mean aggregators run as fused ops (``_ops``: one
graph node each, a closed-form gradient); the rest compose core ops.
"""

from __future__ import annotations

import math
from typing import Any

import pullback
from pullback import Tensor
from pullback.dispatch import apply

from . import _ops
from ._ops import EPS


def pi_0(x: Tensor) -> Tensor:
    """Map [0, 1] to [eps, 1]: keeps a truth value off 0."""
    return (1.0 - EPS) * x + EPS


def pi_1(x: Tensor) -> Tensor:
    """Map [0, 1] to [0, 1 - eps]: keeps a truth value off 1."""
    return (1.0 - EPS) * x


class _Operator:
    """Operators compare equal when they are of one class with equal options, so that two
    formulas built with ``"product"`` semantics can be combined."""

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({options})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(vars(self).items(), key=lambda kv: kv[0]))))


class Connective(_Operator):
    """Base class of connectives (unary or binary operators on truth values)."""


# -- negation -----------------------------------------------------------------------------------

class NotStandard(Connective):
    """``1 - x``."""

    def __call__(self, x: Tensor) -> Tensor:
        return 1.0 - x


class NotGodel(Connective):
    """``1`` if ``x == 0`` else ``0`` (no gradient)."""

    def __call__(self, x: Tensor) -> Tensor:
        return (x == 0.0).to(x.dtype)


# -- conjunction --------------------------------------------------------------------------------

class AndMin(Connective):
    """Goedel's t-norm ``min(x, y)``."""

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return pullback.minimum(x, y)


class AndProd(Connective):
    """The product t-norm ``x y`` (on ``pi_0`` of both when stable)."""

    def __init__(self, stable: bool = True) -> None:
        self.stable = stable

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return apply(_ops.AND_PROD, x, y, stable=self.stable)


class AndLuk(Connective):
    """Lukasiewicz's t-norm ``max(x + y - 1, 0)``."""

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        # maximum, not relu: at the kink the gradient is split evenly, as in PyTorch and LTN.
        return pullback.maximum(x + y - 1.0, 0.0)


# -- disjunction --------------------------------------------------------------------------------

class OrMax(Connective):
    """Goedel's t-conorm ``max(x, y)``."""

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return pullback.maximum(x, y)


class OrProbSum(Connective):
    """The probabilistic sum ``x + y - x y`` (on ``pi_1`` of both when stable)."""

    def __init__(self, stable: bool = True) -> None:
        self.stable = stable

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return apply(_ops.OR_PROB_SUM, x, y, stable=self.stable)


class OrLuk(Connective):
    """Lukasiewicz's t-conorm ``min(x + y, 1)``."""

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return pullback.minimum(x + y, 1.0)


# -- implication --------------------------------------------------------------------------------

class ImpliesKleeneDienes(Connective):
    """``max(1 - x, y)``."""

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return pullback.maximum(1.0 - x, y)


class ImpliesGodel(Connective):
    """``1`` if ``x <= y`` else ``y``."""

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return pullback.where(x <= y, 1.0, y)


class ImpliesReichenbach(Connective):
    """``1 - x + x y`` (on ``pi_0(x)``, ``pi_1(y)`` when stable): the product logic's
    implication in LTN."""

    def __init__(self, stable: bool = True) -> None:
        self.stable = stable

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return apply(_ops.IMPLIES_REICHENBACH, x, y, stable=self.stable)


class ImpliesGoguen(Connective):
    """``1`` if ``x <= y`` else ``y / x`` (on ``pi_0(x)`` when stable)."""

    def __init__(self, stable: bool = True) -> None:
        self.stable = stable

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        if self.stable:
            x = pi_0(x)
        # The division is taken where x > y only (x > 0 there), so no 0/0 reaches the gradient.
        safe = pullback.where(x <= y, 1.0, x)
        return pullback.where(x <= y, 1.0, y / safe)


class ImpliesLuk(Connective):
    """Lukasiewicz's implication ``min(1 - x + y, 1)``."""

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return pullback.minimum(1.0 - x + y, 1.0)


class Equiv(Connective):
    """``(x -> y) and (y -> x)`` for a given conjunction and implication."""

    def __init__(self, and_op: Any, implies_op: Any) -> None:
        self.and_op, self.implies_op = and_op, implies_op

    def __call__(self, x: Tensor, y: Tensor) -> Tensor:
        return self.and_op(self.implies_op(x, y), self.implies_op(y, x))


# -- aggregation --------------------------------------------------------------------------------

def _masked_mean(xs: Tensor, dim: Any, keepdim: bool, mask: Tensor | None) -> Tensor:
    if mask is None:
        return xs.mean(dim, keepdim=keepdim)
    kept = mask.to(xs.dtype)
    return (xs * kept).sum(dim, keepdim=keepdim) / kept.sum(dim, keepdim=keepdim)


class Aggregator(_Operator):
    """Base class of aggregators: ``agg(xs, dim, keepdim=False, mask=None)``; ``mask`` (bool,
    the shape of ``xs``) keeps the entries where it is True (guarded quantifiers)."""


class AggregMin(Aggregator):
    """The minimum (Goedel's universal quantifier)."""

    def __call__(self, xs: Tensor, dim: Any = None, keepdim: bool = False,
                 mask: Tensor | None = None) -> Tensor:
        if mask is not None:
            xs = pullback.where(mask, xs, 1.0)
        return pullback.amin(xs, dim, keepdim=keepdim)


class AggregMax(Aggregator):
    """The maximum (Goedel's existential quantifier)."""

    def __call__(self, xs: Tensor, dim: Any = None, keepdim: bool = False,
                 mask: Tensor | None = None) -> Tensor:
        if mask is not None:
            xs = pullback.where(mask, xs, 0.0)
        return pullback.amax(xs, dim, keepdim=keepdim)


class AggregMean(Aggregator):
    """The arithmetic mean."""

    def __call__(self, xs: Tensor, dim: Any = None, keepdim: bool = False,
                 mask: Tensor | None = None) -> Tensor:
        return _masked_mean(xs, dim, keepdim, mask)


class AggregPMean(Aggregator):
    """The generalized mean ``(mean x^p)^(1/p)`` (on ``pi_0(x)`` when stable): an existential
    quantifier, tending to max as p grows."""

    def __init__(self, p: float = 2, stable: bool = True) -> None:
        self.p, self.stable = p, stable

    def __call__(self, xs: Tensor, dim: Any = None, keepdim: bool = False,
                 mask: Tensor | None = None) -> Tensor:
        if mask is None:
            return apply(_ops.PMEAN, xs, axis=_axis_attr(dim), keepdims=keepdim, p=self.p,
                         stable=self.stable)
        if self.stable:
            xs = pi_0(xs)
        return _masked_mean(xs ** self.p, dim, keepdim, mask) ** (1.0 / self.p)


class AggregPMeanError(Aggregator):
    """``1 - (mean (1 - x)^p)^(1/p)`` (on ``pi_1(x)`` when stable): LTN's universal quantifier,
    tending to min as p grows."""

    def __init__(self, p: float = 2, stable: bool = True) -> None:
        self.p, self.stable = p, stable

    def __call__(self, xs: Tensor, dim: Any = None, keepdim: bool = False,
                 mask: Tensor | None = None) -> Tensor:
        if mask is None:
            return apply(_ops.PMEAN_ERROR, xs, axis=_axis_attr(dim), keepdims=keepdim, p=self.p,
                         stable=self.stable)
        if self.stable:
            xs = pi_1(xs)
        return 1.0 - _masked_mean((1.0 - xs) ** self.p, dim, keepdim, mask) ** (1.0 / self.p)


class AggregSoftMin(Aggregator):
    """A smooth minimum: the mean weighted by ``softmax(-x / temperature)``, so that the least
    true instances carry the weight (and the gradient). Tends to min as the temperature goes to
    0, to the mean as it grows."""

    def __init__(self, temperature: float = 0.1) -> None:
        if temperature <= 0:
            raise ValueError(f"AggregSoftMin: temperature must be positive, got {temperature}")
        self.temperature = temperature

    def __call__(self, xs: Tensor, dim: Any = None, keepdim: bool = False,
                 mask: Tensor | None = None) -> Tensor:
        logits = -xs / self.temperature
        if mask is not None:
            logits = pullback.where(mask, logits, -float("inf"))
        weights = _softmax(logits, dim)
        return (weights * xs).sum(dim, keepdim=keepdim)


class AggregLogSumExp(Aggregator):
    """The log-sum-exp smooth extremum: ``sign * T log mean exp(sign x / T)``, a smooth max for
    ``sign=+1`` (existential) and a smooth min for ``sign=-1`` (universal)."""

    def __init__(self, temperature: float = 0.1, sign: int = -1) -> None:
        if temperature <= 0:
            raise ValueError(f"AggregLogSumExp: temperature must be positive, got {temperature}")
        if sign not in (-1, 1):
            raise ValueError(f"AggregLogSumExp: sign must be -1 (min) or 1 (max), got {sign}")
        self.temperature, self.sign = temperature, sign

    def __call__(self, xs: Tensor, dim: Any = None, keepdim: bool = False,
                 mask: Tensor | None = None) -> Tensor:
        scaled = self.sign * xs / self.temperature
        if mask is None:
            count: Any = xs.numel() // max(xs.sum(dim, keepdim=keepdim).numel(), 1)
            log_mean = pullback.logsumexp(scaled, dim, keepdim=keepdim) - math.log(count)
        else:
            scaled = pullback.where(mask, scaled, -float("inf"))
            count = mask.to(xs.dtype).sum(dim, keepdim=keepdim)
            log_mean = pullback.logsumexp(scaled, dim, keepdim=keepdim) - pullback.log(count)
        return self.sign * self.temperature * log_mean


def _softmax(logits: Tensor, dim: Any) -> Tensor:
    """Softmax over one axis or several (a tuple): the shifted exponentials, normalized."""
    shifted = logits - pullback.amax(logits, dim, keepdim=True).detach()
    e = pullback.exp(shifted)
    return e / e.sum(dim, keepdim=True)


def _axis_attr(dim: Any) -> Any:
    """An op attribute from a dim: None, an int, or a tuple (a list becomes one)."""
    return tuple(dim) if isinstance(dim, list) else dim
