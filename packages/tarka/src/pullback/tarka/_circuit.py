"""A small knowledge compiler: CNF to a decision-DNNF circuit, for exact weighted model counts.

Compilation is DPLL search with two additions that keep the circuit small: independent
components (sub-formulas sharing no variable) are compiled separately and joined by an AND
node, and every residual formula is cached, so a sub-problem met again reuses its node.
Branches that are unsatisfiable are pruned, so the weighted count never adds -inf terms.

Evaluation is in log space on a batch of probabilities: a decision on variable v is
``logaddexp(log p_v + high, log(1 - p_v) + low)``, an AND node the sum of its children. A
variable that disappears from a branch without being decided contributes ``p + (1 - p) = 1``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

Clause = frozenset[int]
Formula = frozenset[Clause]

TRUE, FALSE = -1, -2


class CompilationLimitError(RuntimeError):
    """Compiling a constraint needed more nodes than allowed."""


@dataclass
class Circuit:
    """Nodes in topological order: ``("decision", var, high, low)`` (var 0-based; high/low are
    node indices, TRUE or FALSE) or ``("and", children)``; ``root`` is the last node (or TRUE)."""

    num_vars: int
    nodes: list[tuple] = field(default_factory=list)
    root: int = TRUE


def _condition(formula: Formula, literal: int) -> Formula | None:
    """The formula with ``literal`` true; None when a clause becomes empty (unsatisfiable)."""
    out = []
    for clause in formula:
        if literal in clause:
            continue
        if -literal in clause:
            reduced = clause - {-literal}
            if not reduced:
                return None
            out.append(reduced)
        else:
            out.append(clause)
    return frozenset(out)


def _components(formula: Formula) -> list[Formula]:
    """The formula split into groups of clauses that share no variable (union-find)."""
    parent: dict[int, int] = {}

    def find(v: int) -> int:
        while parent.setdefault(v, v) != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    for clause in formula:
        first, *rest = (abs(lit) for lit in clause)
        for v in rest:
            parent[find(v)] = find(first)
        find(first)
    groups: dict[int, list[Clause]] = {}
    for clause in formula:
        groups.setdefault(find(abs(next(iter(clause)))), []).append(clause)
    return [frozenset(g) for g in groups.values()]


def compile_cnf(clauses: Iterable[Iterable[int]], num_vars: int, max_nodes: int) -> Circuit:
    """Compile DIMACS-style clauses (literals 1..num_vars, negative for negation)."""
    formula = frozenset(frozenset(c) for c in clauses)
    circuit = Circuit(num_vars)
    cache: dict[Formula, int] = {}

    def add(node: tuple) -> int:
        if len(circuit.nodes) >= max_nodes:
            raise CompilationLimitError(
                f"SemanticLoss: compiling the constraint needs more than max_nodes={max_nodes} "
                "circuit nodes; raise max_nodes or simplify the constraint")
        circuit.nodes.append(node)
        return len(circuit.nodes) - 1

    def build(f: Formula) -> int:
        if not f:
            return TRUE
        if f in cache:
            return cache[f]
        parts = _components(f)
        if len(parts) > 1:
            children = [build(p) for p in parts]
            node = FALSE if FALSE in children else add(("and", [c for c in children if c != TRUE]))
        else:
            counts = Counter(abs(lit) for clause in f for lit in clause)
            var = counts.most_common(1)[0][0]
            branches = []
            for literal in (var, -var):
                reduced = _condition(f, literal)
                branches.append(FALSE if reduced is None else build(reduced))
            high, low = branches
            node = FALSE if high == low == FALSE else add(("decision", var - 1, high, low))
        cache[f] = node
        return node

    for clause in formula:
        for lit in clause:
            if lit == 0 or abs(lit) > num_vars:
                raise ValueError(f"SemanticLoss: literal {lit} is outside 1..{num_vars}")
    circuit.root = build(formula)
    return circuit
