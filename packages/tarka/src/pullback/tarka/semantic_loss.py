"""Semantic loss (Xu et al. 2018): ``-log`` of the weighted model count of a constraint under
independent Bernoulli probabilities, ``-log sum_{x |= alpha} prod_i p_i^x_i (1 - p_i)^(1 - x_i)``.

Constraints: :class:`ExactlyOne` (a closed form, linear in the number of variables), and
:class:`CNF` (DIMACS-style clauses), counted exactly either by enumerating the assignments
(``method="enumerate"``, up to 20 variables) or through the knowledge compiler of
:mod:`pullback.tarka._circuit` (``method="compile"``, the default), with a clear error past a
size limit.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterable, Sequence

import numpy as np

import pullback
from pullback import Tensor, nn
from pullback.errors import ShapeError

from ._circuit import FALSE, TRUE, Circuit, compile_cnf

MAX_ENUMERATED_VARS = 20
_REDUCTIONS = ("mean", "sum", "none")


def _log_probs(probs: Tensor) -> tuple[Tensor, Tensor]:
    """``log p`` and ``log(1 - p)``, with p kept inside (0, 1) by one ulp so that a probability
    of exactly 0 or 1 gives a large finite loss rather than an infinite one."""
    info = pullback.dtypes.finfo(probs.dtype)
    p = pullback.clamp(probs, float(info.tiny), 1.0 - float(info.eps))
    return pullback.log(p), pullback.log1p(-p)


def _logaddexp(a: Tensor, b: Tensor) -> Tensor:
    high = pullback.maximum(a, b)
    return high + pullback.log1p(pullback.exp(-pullback.abs(a - b)))


class Constraint:
    """A propositional constraint over ``num_vars`` Boolean variables."""

    num_vars: int

    def log_wmc(self, probs: Tensor) -> Tensor:
        """``log`` of the weighted model count for each row of ``probs`` (..., num_vars)."""
        raise NotImplementedError


class ExactlyOne(Constraint):
    """Exactly one of ``num_vars`` variables is true (a one-hot output)."""

    def __init__(self, num_vars: int) -> None:
        if num_vars < 1:
            raise ValueError(f"ExactlyOne: num_vars must be at least 1, got {num_vars}")
        self.num_vars = num_vars

    def clauses(self) -> list[list[int]]:
        """The same constraint as CNF: at least one, and no two."""
        n = self.num_vars
        return [list(range(1, n + 1))] + [[-i, -j] for i in range(1, n + 1)
                                          for j in range(i + 1, n + 1)]

    def log_wmc(self, probs: Tensor) -> Tensor:
        # sum_i p_i prod_{j != i} (1 - p_j) = exp(sum_j log(1 - p_j)) * sum_i p_i / (1 - p_i).
        log_p, log_q = _log_probs(probs)
        return log_q.sum(-1) + pullback.logsumexp(log_p - log_q, -1)


class CNF(Constraint):
    """A constraint in conjunctive normal form.

    Args:
        clauses: clauses of DIMACS literals: ``k`` is variable k (1-based) true, ``-k`` false;
            ``[[1, 2], [-1, -2]]`` is "exactly one of x1, x2".
        num_vars: the number of variables (default: the largest one mentioned).
        method: ``"compile"`` (decision-DNNF, the default) or ``"enumerate"``.
        max_nodes: the compiler's size limit.
    """

    def __init__(self, clauses: Iterable[Iterable[int]], num_vars: int | None = None,
                 method: str = "compile", max_nodes: int = 100_000) -> None:
        self.clauses = [list(c) for c in clauses]
        if not all(self.clauses):
            raise ValueError("CNF: an empty clause is unsatisfiable")
        mentioned = max((abs(lit) for c in self.clauses for lit in c), default=0)
        self.num_vars = mentioned if num_vars is None else num_vars
        if method not in ("compile", "enumerate"):
            raise ValueError(f"CNF: method must be 'compile' or 'enumerate', got {method!r}")
        self.method = method
        if method == "enumerate":
            if self.num_vars > MAX_ENUMERATED_VARS:
                raise ValueError(f"CNF: enumeration is limited to {MAX_ENUMERATED_VARS} variables, "
                                 f"got {self.num_vars}; use method='compile'")
            self._models = _models(self.clauses, self.num_vars)
            if not len(self._models):
                raise ValueError("CNF: the constraint has no satisfying assignment")
        else:
            self._circuit = compile_cnf(self.clauses, self.num_vars, max_nodes)
            if self._circuit.root == FALSE:
                raise ValueError("CNF: the constraint has no satisfying assignment")

    @property
    def circuit_size(self) -> int:
        """The number of nodes of the compiled circuit (0 when enumerating)."""
        return len(self._circuit.nodes) if self.method == "compile" else 0

    def log_wmc(self, probs: Tensor) -> Tensor:
        log_p, log_q = _log_probs(probs)
        if self.method == "enumerate":
            models = pullback.tensor(self._models, dtype=probs.dtype, device=probs.device)
            # Each model's log weight: sum_i x_i log p_i + (1 - x_i) log(1 - p_i).
            weights = log_p @ models.T + log_q @ (1.0 - models).T
            return pullback.logsumexp(weights, -1)
        return _evaluate(self._circuit, log_p, log_q)


def _models(clauses: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """Every satisfying assignment, as rows of 0/1 (vectorized over all 2^n assignments)."""
    assignments = np.array(list(itertools.product((0, 1), repeat=n)), dtype=bool).reshape(-1, n)
    ok = np.ones(len(assignments), dtype=bool)
    for clause in clauses:
        sat = np.zeros(len(assignments), dtype=bool)
        for lit in clause:
            column = assignments[:, abs(lit) - 1]
            sat |= column if lit > 0 else ~column
        ok &= sat
    return assignments[ok].astype(np.float64)


def _evaluate(circuit: Circuit, log_p: Tensor, log_q: Tensor) -> Tensor:
    """The circuit's log weighted count per row, one Tensor op per node."""
    zero = pullback.zeros(log_p.shape[:-1], dtype=log_p.dtype, device=log_p.device)
    if circuit.root == TRUE:
        return zero
    values: list[Tensor] = []
    for node in circuit.nodes:
        if node[0] == "and":
            total = zero
            for child in node[1]:
                total = total + values[child]
            values.append(total)
            continue
        _, var, high, low = node
        branches = []
        if high != FALSE:
            branches.append(log_p[..., var] + (zero if high == TRUE else values[high]))
        if low != FALSE:
            branches.append(log_q[..., var] + (zero if low == TRUE else values[low]))
        values.append(branches[0] if len(branches) == 1 else _logaddexp(*branches))
    return values[circuit.root]


class SemanticLoss(nn.Module):
    """``SemanticLoss(constraint)(probs)``: ``-log WMC(constraint, probs)`` per row, reduced.

    Args:
        constraint: an :class:`ExactlyOne` or :class:`CNF` (or any :class:`Constraint`).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    ``probs`` are probabilities in [0, 1] (e.g. sigmoid outputs), shape (..., num_vars).
    """

    def __init__(self, constraint: Constraint, reduction: str = "mean") -> None:
        super().__init__()
        if not isinstance(constraint, Constraint):
            raise TypeError(f"SemanticLoss: constraint must be a Constraint (e.g. "
                            f"tarka.ExactlyOne(num_vars) or tarka.CNF(clauses, num_vars)), got "
                            f"{type(constraint).__name__} {constraint!r}")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"SemanticLoss: reduction must be one of {_REDUCTIONS}, "
                             f"got {reduction!r}")
        self.constraint, self.reduction = constraint, reduction

    def forward(self, probs: Any) -> Tensor:
        probs = probs if isinstance(probs, Tensor) else pullback.tensor(probs)
        if probs.ndim == 0 or probs.shape[-1] != self.constraint.num_vars:
            raise ShapeError(f"SemanticLoss: probabilities of shape {tuple(probs.shape)} do not "
                             f"end in the constraint's {self.constraint.num_vars} variables")
        detached = probs.detach()
        if probs.numel() and (float(detached.min()) < 0.0 or float(detached.max()) > 1.0):
            raise ValueError(f"SemanticLoss: probabilities must lie in [0, 1], got values in "
                             f"[{float(detached.min()):g}, {float(detached.max()):g}]")
        loss = -self.constraint.log_wmc(probs)
        if self.reduction == "mean":
            return loss.mean()
        return loss.sum() if self.reduction == "sum" else loss
