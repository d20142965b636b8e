"""Explicit Runge-Kutta methods: the Butcher tableau that defines one, its stages, and the
linear combinations of stages every such method is built from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from .._dynamics import NONE, Dynamics

Pairs = tuple[tuple[int, float], ...]


def nonzero(weights: Sequence[float]) -> Pairs:
    """``(stage index, weight)`` for every weight that is not zero (zeros cost no array op)."""
    return tuple((j, float(w)) for j, w in enumerate(weights) if w != 0)


def combine(pairs: Pairs, ks: Sequence[Any], scale: Any) -> Any:
    """``sum(w * scale * ks[j])`` over ``pairs``: works on arrays and on Tensors alike (Python
    operators only), multiplying the scalar weights first so each term is one array op."""
    (j, w), *rest = pairs
    total = ks[j] * (w * scale)
    for j, w in rest:
        total = total + ks[j] * (w * scale)
    return total


@dataclass(frozen=True)
class ButcherTableau:
    """An explicit Runge-Kutta method with ``s`` stages.

    Attributes:
        c: the times of stages 2..s, as fractions of the step.
        a: ``a[i]`` weighs stages 1..i+1 to make the state of stage i+2.
        b: weights of the solution at the end of the step (``s`` entries).
        b_error: ``b`` minus the weights of the embedded method (the local error estimate), or
            ``None`` for fixed-step methods.
        dense: per stage, the coefficients of theta, theta^2, theta^3, theta^4 in its weight of
            the dense output ``y(t0 + theta dt) = y0 + dt * sum(w_i(theta) k_i)``, or ``None``.
    """

    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    b_error: tuple[float, ...] | None = None
    dense: tuple[tuple[float, ...], ...] | None = None
    rows: tuple[Pairs, ...] = field(init=False)
    b_pairs: Pairs = field(init=False)
    error_pairs: Pairs = field(init=False)
    fsal: bool = field(init=False)

    def __post_init__(self) -> None:
        assert len(self.a) == len(self.c) and len(self.b) == len(self.c) + 1
        set_ = object.__setattr__  # frozen: derived fields are set once, here
        set_(self, "rows", tuple(nonzero(row) for row in self.a))
        set_(self, "b_pairs", nonzero(self.b))
        set_(self, "error_pairs", nonzero(self.b_error) if self.b_error is not None else ())
        # First same as last: the last stage's state is the solution, so it needs no sum of its own.
        set_(self, "fsal", bool(self.a) and self.b[-1] == 0 and tuple(self.a[-1]) == self.b[:-1])

    def dense_weights(self, theta: Any) -> Pairs:
        """The dense-output weights at ``theta`` (a float, or a Tensor when time has a gradient)."""
        assert self.dense is not None
        return tuple((j, theta * (p1 + theta * (p2 + theta * (p3 + theta * p4))))
                     for j, (p1, p2, p3, p4) in enumerate(self.dense) if (p1, p2, p3, p4) != (0, 0, 0, 0))


def quartic_dense_output(b: Sequence[float], mid: Sequence[float]) -> tuple[tuple[float, ...], ...]:
    """The dense output of torchdiffeq's solvers as stage weights.

    torchdiffeq fits the quartic through y0, y1 = y0 + dt*sum(b k), y_mid = y0 + dt*sum(mid k)
    with slopes f0 = k_0 and f1 = k_last. Every coefficient of that quartic is y0 or a sum of
    stages, so it is ``y0 + dt * sum(w_i(theta) k_i)`` with the polynomials returned here: one
    combination of stages per output time instead of fitting five arrays on every step.
    """
    last = len(b) - 1
    weights = []
    for i, (s, m) in enumerate(zip(b, mid)):
        first, end = float(i == 0), float(i == last)
        weights.append((first,
                        end - 4 * first - 5 * s + 16 * m,
                        5 * first - 3 * end + 14 * s - 32 * m,
                        2 * end - 2 * first - 8 * s + 16 * m))
    return tuple(weights)


def hermite_dense_output(b: Sequence[float]) -> tuple[tuple[float, ...], ...]:
    """The cubic Hermite interpolant through y0, y1 with slopes k_0 and k_last, as stage weights
    (diffrax's dense output for its low-order solvers): third order between steps where
    k_last = f(t1, y1)."""
    last = len(b) - 1
    return tuple((float(i == 0), -2.0 * (i == 0) + 3 * s - (i == last),
                  float(i == 0) - 2 * s + (i == last), 0.0) for i, s in enumerate(b))


def stages(fn: Dynamics, tableau: ButcherTableau, t0: Any, t1: Any, dt: Any, y0: Any, f0: Any,
           end_perturb: int = NONE) -> tuple[list[Any], Any]:
    """The rates ``k`` of one step from ``(t0, y0)`` (``f0 = fn(t0, y0)``) and the state of the
    last stage. A stage at the end of the step is evaluated at ``t1`` itself (not ``t0 + dt``,
    which may round differently), nudged by ``end_perturb``."""
    ks, y = [f0], y0
    for c, row in zip(tableau.c, tableau.rows):
        y = y0 + combine(row, ks, dt)
        ks.append(fn(t1, y, end_perturb) if c == 1.0 else fn(t0 + c * dt, y))
    return ks, y
