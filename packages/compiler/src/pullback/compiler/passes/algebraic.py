"""Algebraic simplification: rewrites that are exact for every input, NaN, infinities and signed
zeros included.

Each rewrite is registered in :data:`REWRITES` with the condition under which it applies; the
docs table of rewrites is generated from it (:func:`rewrite_table`). A rewrite replaces a node's
output by an existing value only when that value has the output's shape and dtype (so a
broadcast or a type promotion is never dropped). Rewrites that are *not* exact in floating point
are kept to integer dtypes: ``x - x`` is NaN for an infinite ``x``, ``x * 0`` is NaN for NaN and
``-0.0`` for a negative ``x``, ``x / x`` is NaN at 0, and ``x + 0.0`` turns ``-0.0`` into
``0.0`` (only ``x + (-0.0)`` and ``x - 0.0`` give ``x`` back for every float).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .._ir import Graph, Node, Value, resolve
from ._registry import graph_pass

Rule = Callable[[Node, Graph], Any]  # returns the replacement (a Value) or None


@dataclass(frozen=True)
class Rewrite:
    """One rewrite: the ops it looks at, the rule, and its condition in words (for the docs)."""

    ops: tuple[str, ...]
    rule: Rule
    pattern: str
    condition: str


REWRITES: dict[str, Rewrite] = {}


def rewrite(name: str, ops: tuple[str, ...], pattern: str, condition: str
            ) -> Callable[[Rule], Rule]:
    def register(rule: Rule) -> Rule:
        REWRITES[name] = Rewrite(ops, rule, pattern, condition)
        return rule

    return register


# -- what an argument is ---------------------------------------------------------------------------
def _constant(a: Any, graph: Graph) -> Any:
    """The value of a literal number or a constant array argument (else None)."""
    if isinstance(a, (bool, int, float)) and not isinstance(a, np.ndarray):
        return np.asarray(a)
    if a.__class__ is Value and a in graph.constants:
        return np.asarray(graph.constants[a])
    return None


def _all(a: Any, graph: Graph, test: Callable[[np.ndarray], np.ndarray]) -> bool:
    c = _constant(a, graph)
    return c is not None and c.dtype.kind in "biuf" and c.size > 0 and bool(np.all(test(c)))


def _same_type(x: Any, node: Node) -> bool:
    """``x`` can stand for ``node``'s output: a Value of the same shape and dtype."""
    out = node.outputs[0]
    return x.__class__ is Value and not x.weak and x.shape == out.shape and x.dtype == out.dtype


def _integer(node: Node) -> bool:
    return node.outputs[0].dtype.kind in "biu"


def _producer(a: Any, op: str) -> Node | None:
    if a.__class__ is Value and a.producer is not None and a.producer.op == op:
        return a.producer
    return None


def _is_one(c: np.ndarray) -> np.ndarray:
    return c == 1


def _is_zero(c: np.ndarray) -> np.ndarray:
    return c == 0


def _is_negative_zero(c: np.ndarray) -> np.ndarray:
    return (c == 0) & np.signbit(c)


def _is_positive_zero(c: np.ndarray) -> np.ndarray:
    return (c == 0) & ~np.signbit(c)


# -- the rewrites ----------------------------------------------------------------------------------
@rewrite("mul_one", ("mul",), "x * 1, 1 * x -> x", "always (x * 1 is x for every float)")
def _mul_one(node: Node, graph: Graph) -> Any:
    x, y = node.inputs
    if _all(y, graph, _is_one) and _same_type(x, node):
        return x
    if _all(x, graph, _is_one) and _same_type(y, node):
        return y
    return None


@rewrite("div_one", ("div",), "x / 1 -> x", "always")
def _div_one(node: Node, graph: Graph) -> Any:
    x, y = node.inputs
    return x if _all(y, graph, _is_one) and _same_type(x, node) else None


@rewrite("add_zero", ("add",), "x + 0, 0 + x -> x",
         "integers; for floats only when the zero is -0.0 (0.0 + -0.0 is 0.0)")
def _add_zero(node: Node, graph: Graph) -> Any:
    x, y = node.inputs
    zero = _is_zero if _integer(node) else _is_negative_zero
    if _all(y, graph, zero) and _same_type(x, node):
        return x
    if _all(x, graph, zero) and _same_type(y, node):
        return y
    return None


@rewrite("sub_zero", ("sub",), "x - 0 -> x", "integers; floats when the zero is +0.0")
def _sub_zero(node: Node, graph: Graph) -> Any:
    x, y = node.inputs
    zero = _is_zero if _integer(node) else _is_positive_zero
    return x if _all(y, graph, zero) and _same_type(x, node) else None


def _zeros_like(node: Node, graph: Graph) -> Value:
    out = node.outputs[0]
    return graph.add_constant(np.zeros(out.shape, out.dtype))


@rewrite("sub_self", ("sub",), "x - x -> 0",
         "integers only (inf - inf and NaN - NaN are NaN)")
def _sub_self(node: Node, graph: Graph) -> Any:
    x, y = node.inputs
    if x is y and x.__class__ is Value and _integer(node) and x.shape == node.outputs[0].shape:
        return _zeros_like(node, graph)
    return None


@rewrite("mul_zero", ("mul",), "x * 0 -> 0",
         "integers only (NaN * 0 is NaN, inf * 0 is NaN, -1.0 * 0 is -0.0)")
def _mul_zero(node: Node, graph: Graph) -> Any:
    x, y = node.inputs
    if not _integer(node):
        return None
    for a, b in ((x, y), (y, x)):
        if _all(b, graph, _is_zero) and a.__class__ is Value:
            return _zeros_like(node, graph)
    return None


@rewrite("div_self", ("div",), "x / x -> 1", "never: 0/0 and inf/inf are NaN (listed so that "
         "the table says so)")
def _div_self(node: Node, graph: Graph) -> Any:
    return None


@rewrite("neg_neg", ("neg",), "-(-x) -> x", "always")
def _neg_neg(node: Node, graph: Graph) -> Any:
    inner = _producer(node.inputs[0], "neg")
    return inner.inputs[0] if inner is not None and _same_type(inner.inputs[0], node) else None


@rewrite("permute_permute", ("permute",), "permute(permute(x, p), q) -> permute(x, p[q]) "
         "(x when that is the identity)", "always (moves data only)")
def _permute_permute(node: Node, graph: Graph) -> Any:
    inner = _producer(node.inputs[0], "permute")
    if inner is None:
        return None
    composed = tuple(inner.attrs["axes"][a] for a in node.attrs["axes"])
    if composed == tuple(range(len(composed))):
        return inner.inputs[0] if _same_type(inner.inputs[0], node) else None
    node.inputs, node.attrs = inner.inputs, {**node.attrs, "axes": composed}
    return None


@rewrite("swapaxes_swapaxes", ("swapaxes",), "swapaxes(swapaxes(x, a, b), a, b) -> x", "always")
def _swapaxes_twice(node: Node, graph: Graph) -> Any:
    inner = _producer(node.inputs[0], "swapaxes")
    if inner is None:
        return None
    ndim = node.outputs[0].ndim
    mine = {node.attrs["a"] % ndim, node.attrs["b"] % ndim}
    theirs = {inner.attrs["a"] % ndim, inner.attrs["b"] % ndim}
    return inner.inputs[0] if mine == theirs and _same_type(inner.inputs[0], node) else None


@rewrite("reshape_chain", ("reshape",), "reshape(reshape(x, s), t) -> reshape(x, t); "
         "reshape(x, x.shape) -> x", "always")
def _reshape_chain(node: Node, graph: Graph) -> Any:
    (x,) = node.inputs[:1]
    if _same_type(x, node):
        return x
    inner = _producer(x, "reshape")
    if inner is not None:
        node.inputs = (inner.inputs[0], *node.inputs[1:])
        return inner.inputs[0] if _same_type(inner.inputs[0], node) else None
    return None


@rewrite("identity_broadcast", ("broadcast_to", "sum_to"),
         "broadcast_to(x, x.shape), sum_to(x, x.shape) -> x", "always")
def _identity_broadcast(node: Node, graph: Graph) -> Any:
    x = node.inputs[0]
    return x if _same_type(x, node) else None


@rewrite("cast_round_trip", ("cast",), "cast(cast(x, wider float), x.dtype) -> x",
         "when the inner cast widens a float (float16 -> float32 -> float16, float32 -> float64 "
         "-> float32): every value survives")
def _cast_round_trip(node: Node, graph: Graph) -> Any:
    inner = _producer(node.inputs[0], "cast")
    if inner is None:
        return None
    x = inner.inputs[0]
    if not _same_type(x, node) or x.dtype.kind != "f":
        return None
    wide = inner.outputs[0].dtype
    return x if wide.kind == "f" and wide.itemsize > x.dtype.itemsize else None


_BY_OP: dict[str, list[Rewrite]] = {}


def _rules_for(op: str) -> list[Rewrite]:
    if not _BY_OP:
        for r in REWRITES.values():
            for o in r.ops:
                _BY_OP.setdefault(o, []).append(r)
    return _BY_OP.get(op, [])


@graph_pass("algebraic")
def algebraic_simplification(graph: Graph) -> Graph:
    """Apply the exact rewrites of :data:`REWRITES` (one pass in order; chains collapse because
    each node sees its already-rewritten producers)."""
    mapping: dict[Value, Value] = {}
    kept = []
    for node in graph.nodes:
        if mapping:
            node.inputs = tuple(resolve(a, mapping) for a in node.inputs)
        replacement = None
        if len(node.outputs) == 1:
            for r in _rules_for(node.op):
                replacement = r.rule(node, graph)
                if replacement is not None:
                    break
        if replacement is None:
            kept.append(node)
        else:
            mapping[node.outputs[0]] = replacement
    graph.nodes = kept
    graph.substitute(mapping)
    return graph



def rewrite_table() -> str:
    """The Markdown table of rewrites and their conditions (docs/compiler.md embeds it)."""
    lines = ["| rewrite | pattern | applies when |", "|---|---|---|"]
    for name, r in REWRITES.items():
        lines.append(f"| `{name}` | `{r.pattern}` | {r.condition} |")
    return "\n".join(lines)
