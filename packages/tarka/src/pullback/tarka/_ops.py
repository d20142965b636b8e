"""Fused ops of product real logic: the stable connectives and LTN's p-mean quantifiers, each one
registry op with a closed-form grad rule instead of a chain of core ops; and the copy of a
term's individuals onto the rows of a predicate's batch.

Why: composed of core ops, ``forall x, y: (A(x) & A(y)) >> R(x, y)`` with the p-mean error is
seventeen ops (LTN's projections ``pi_0``/``pi_1`` alone are one or two each), so seventeen graph
nodes and dispatches, and as many passes over the pair grid forward and more backward. Fused,
each connective and each aggregator is one op (one node, one dispatch, a kernel that reuses its
buffers) whose backward is one expression. The forward values are computed in the composed
order (LTN's), so they are bitwise those of the composition; the gradients agree with it to
rounding (tests: the composition bitwise, LTNtorch in float64, gradcheck, gradgradcheck).

The grad rules use Python operators and ``reshape`` only, so the same rule serves a first-order
backward (raw arrays) and ``create_graph=True`` (Tensors).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pullback.promotion import FLOAT
from pullback.registry import Op

EPS = 1e-4  # LTN's eps of the projections (fuzzy.pi_0 and fuzzy.pi_1 use it too)
SHRINK = 1.0 - EPS


# -- connectives ---------------------------------------------------------------------------------
# pi_0(x) = (1 - eps) x + eps keeps x off 0; pi_1(x) = (1 - eps) x keeps it off 1.

def _pi_0(x: Any, stable: bool) -> Any:
    return SHRINK * x + EPS if stable else x


def _pi_1(x: Any, stable: bool) -> Any:
    return SHRINK * x if stable else x


def _and_prod_kernel(xp: Any) -> Any:
    def and_prod(x: Any, y: Any, *, stable: bool) -> Any:
        return xp.multiply(_pi_0(x, stable), _pi_0(y, stable))

    return and_prod


def _or_prob_sum_kernel(xp: Any) -> Any:
    def or_prob_sum(x: Any, y: Any, *, stable: bool) -> Any:
        x, y = _pi_1(x, stable), _pi_1(y, stable)
        out = xp.add(x, y)  # x + y - x y, in that order (the composition's rounding)
        out -= x * y
        return out

    return or_prob_sum


def _implies_reichenbach_kernel(xp: Any) -> Any:
    def implies_reichenbach(x: Any, y: Any, *, stable: bool) -> Any:
        x, y = _pi_0(x, stable), _pi_1(y, stable)
        xy = x * y
        out = xp.subtract(1.0, x)  # 1 - x + x y, in that order
        if out.shape != xy.shape:  # x broadcasts against y: no in-place sum
            return out + xy
        out += xy
        return out

    return implies_reichenbach


AND_PROD = Op("tarka.and_prod", _and_prod_kernel, promotion=FLOAT,
              doc="pi_0(x) pi_0(y) (pi_0 only when stable): the product t-norm")
OR_PROB_SUM = Op("tarka.or_prob_sum", _or_prob_sum_kernel, promotion=FLOAT,
                 doc="x + y - x y on pi_1 of both (when stable): the probabilistic sum")
IMPLIES_REICHENBACH = Op("tarka.implies_reichenbach", _implies_reichenbach_kernel,
                         promotion=FLOAT,
                         doc="1 - x + x y on pi_0(x), pi_1(y) (when stable): Reichenbach's")


def _slope(stable: bool) -> float:
    """d pi / dx."""
    return SHRINK if stable else 1.0


@AND_PROD.def_grad
def _and_prod_grad(F: Any, g: Any, out: Any, x: Any, y: Any, *, stable: bool) -> Any:
    k = _slope(stable)
    return g * (k * _pi_0(y, stable)), g * (k * _pi_0(x, stable))


@OR_PROB_SUM.def_grad
def _or_prob_sum_grad(F: Any, g: Any, out: Any, x: Any, y: Any, *, stable: bool) -> Any:
    k = _slope(stable)
    return g * (k - k * _pi_1(y, stable)), g * (k - k * _pi_1(x, stable))


@IMPLIES_REICHENBACH.def_grad
def _implies_reichenbach_grad(F: Any, g: Any, out: Any, x: Any, y: Any, *, stable: bool) -> Any:
    k = _slope(stable)
    return g * (k * _pi_1(y, stable) - k), g * (k * _pi_0(x, stable))


# -- aggregators ---------------------------------------------------------------------------------

def _count(shape: tuple[int, ...], axis: Any) -> int:
    axes = range(len(shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    return max(math.prod(shape[a] for a in axes), 1)  # an empty mean has an empty gradient


def _kept(g: Any, x_shape: tuple[int, ...], axis: Any, keepdims: bool) -> Any:
    """``g`` (the output's gradient) with the reduced axes back as size 1, to broadcast."""
    if keepdims:
        return g
    axes = range(len(x_shape)) if axis is None else (axis,) if isinstance(axis, int) else axis
    reduced = {a % len(x_shape) for a in axes}
    return g.reshape(tuple(1 if i in reduced else n for i, n in enumerate(x_shape)))


def _power(xp: Any, t: Any, p: float) -> Any:
    # t * t is what x ** 2 computes (NumPy and PyTorch square it), in one cheap pass.
    return t * t if p == 2 else xp.power(t, p)


def _pmean_kernel(xp: Any) -> Any:
    def pmean(x: Any, *, axis: Any, keepdims: bool, p: float, stable: bool) -> Any:
        mean = xp.mean(_power(xp, _pi_0(x, stable), p), axis=axis, keepdims=keepdims)
        return xp.power(mean, 1.0 / p)

    return pmean


def _pmean_error_kernel(xp: Any) -> Any:
    def pmean_error(x: Any, *, axis: Any, keepdims: bool, p: float, stable: bool) -> Any:
        t = xp.subtract(1.0, _pi_1(x, stable))
        mean = xp.mean(_power(xp, t, p), axis=axis, keepdims=keepdims)
        return xp.subtract(1.0, xp.power(mean, 1.0 / p))

    return pmean_error


PMEAN = Op("tarka.pmean", _pmean_kernel, save_output=True, promotion=FLOAT,
           doc="(mean pi_0(x)^p)^(1/p) over axes: LTN's existential quantifier")
PMEAN_ERROR = Op("tarka.pmean_error", _pmean_error_kernel, save_output=True, promotion=FLOAT,
                 doc="1 - (mean (1 - pi_1(x))^p)^(1/p) over axes: LTN's universal quantifier")


def _pmean_input_grad(g: Any, r: Any, t: Any, n: int, p: float, slope: float) -> Any:
    """The gradient through ``r = (mean t^p)^(1/p)`` (mean over n entries) of a t that moves by
    ``slope`` per unit of x: ``g slope r^(1-p) t^(p-1) / n`` (r and g kept-dims)."""
    if p == 2:
        return (g * (slope / n) / r) * t
    return (g * (slope / n) * r ** (1.0 - p)) * t ** (p - 1.0)


@PMEAN.def_grad
def _pmean_grad(F: Any, g: Any, out: Any, x: Any, *, axis: Any, keepdims: bool, p: float,
                stable: bool) -> Any:
    shape = tuple(x.shape)
    r = _kept(out, shape, axis, keepdims)
    return (_pmean_input_grad(_kept(g, shape, axis, keepdims), r, _pi_0(x, stable),
                              _count(shape, axis), p, _slope(stable)),)


@PMEAN_ERROR.def_grad
def _pmean_error_grad(F: Any, g: Any, out: Any, x: Any, *, axis: Any, keepdims: bool, p: float,
                      stable: bool) -> Any:
    # out = 1 - r, r the p-mean of t = 1 - pi_1(x): both minus signs cancel.
    shape = tuple(x.shape)
    r = 1.0 - _kept(out, shape, axis, keepdims)
    return (_pmean_input_grad(_kept(g, shape, axis, keepdims), r, 1.0 - _pi_1(x, stable),
                              _count(shape, axis), p, _slope(stable)),)


# -- grounding ----------------------------------------------------------------------------------

def _grid_rows_kernel(xp: Any) -> Any:
    def grid_rows(x: Any, *, shape: tuple[int, ...], n_vars: int) -> Any:
        count, features = math.prod(shape[:n_vars]), shape[n_vars:]
        if xp is np and features and x.size and x.dtype.kind in "fiub":
            # Copy each individual's features as one opaque item: broadcasting P(x, y)'s x over
            # y copies 65,536 items of 2 floats, which NumPy does element by element in an inner
            # loop two long (0.56 ms), and as 8-byte items in one long loop (0.06 ms).
            item = np.dtype((np.void, x.itemsize * math.prod(features)))
            rows = np.ascontiguousarray(x).reshape(x.shape[:n_vars] + (-1,)).view(item)
            grid = np.broadcast_to(rows.reshape(x.shape[:n_vars]), shape[:n_vars])
            return grid.reshape(count).view(x.dtype).reshape((count,) + features)
        return xp.broadcast_to(x, shape).reshape((count,) + features)

    return grid_rows


# A term's individuals broadcast over the variables of a predicate's arguments and flattened to
# one row per combination (the batch the predicate's model is called on). Where nothing is
# broadcast the rows are a view of the term (view/may_copy: in-place changes are then tracked).
GRID_ROWS = Op("tarka.grid_rows", _grid_rows_kernel, save_inputs=False, view=True,
               may_copy=True, doc="x broadcast to shape, its first n_vars axes flattened into rows")


@GRID_ROWS.def_grad
def _grid_rows_grad(F: Any, g: Any, out: Any, x: Any, *, shape: tuple[int, ...],
                    n_vars: int) -> Any:
    return (F.sum_to(F.reshape(g, shape=tuple(shape)), shape=tuple(x.shape)),)


TARKA_OPS = (AND_PROD, OR_PROB_SUM, IMPLIES_REICHENBACH, PMEAN, PMEAN_ERROR, GRID_ROWS)


# -- forward mode (pullback.func's "jvp" key) ----------------------------------------------------
# The tangent of each op from its grad rule's partial derivatives, so the two cannot disagree.

def _jvp_connective(rule: Any) -> Any:
    def jvp(F: Any, tangents: Any, out: Any, x: Any, y: Any, *, stable: bool) -> Any:
        # A connective's Jacobian is diagonal per input: the grad rule at a cotangent of 1 gives
        # the partials (broadcasting against the other input), the tangent is their sum.
        partials = rule(F, 1.0, out, x, y, stable=stable)
        terms = [d * t for d, t in zip(partials, tangents) if t is not None]
        return terms[0] + terms[1] if len(terms) == 2 else terms[0]

    return jvp


def _jvp_aggregator(rule: Any) -> Any:
    def jvp(F: Any, tangents: Any, out: Any, x: Any, *, axis: Any, keepdims: bool, p: float,
            stable: bool) -> Any:
        # The grad rule at a cotangent of ones: every entry's partial derivative of its group's
        # aggregate; the tangent sums them, weighted by the entries' tangents, over each group.
        ones = F.full(tuple(out.shape), 1.0, like=out)
        (partial,) = rule(F, ones, out, x, axis=axis, keepdims=keepdims, p=p, stable=stable)
        return F.sum(partial * tangents[0], axis=axis, keepdims=keepdims)

    return jvp


def _jvp_grid_rows(F: Any, tangents: Any, out: Any, x: Any, *, shape: tuple[int, ...],
                   n_vars: int) -> Any:
    return getattr(F, GRID_ROWS.name)(tangents[0], shape=shape, n_vars=n_vars)  # linear


JVP_RULES = {
    AND_PROD.name: _jvp_connective(_and_prod_grad),
    OR_PROB_SUM.name: _jvp_connective(_or_prob_sum_grad),
    IMPLIES_REICHENBACH.name: _jvp_connective(_implies_reichenbach_grad),
    PMEAN.name: _jvp_aggregator(_pmean_grad),
    PMEAN_ERROR.name: _jvp_aggregator(_pmean_error_grad),
    GRID_ROWS.name: _jvp_grid_rows,
}
