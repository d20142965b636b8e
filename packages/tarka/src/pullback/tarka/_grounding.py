"""Groundings: predicates and functions implemented by Modules (or plain callables).

Called on terms, a predicate evaluates its model once on every combination of the terms'
individuals (the cross product over their free variables, shared variables paired), in one
batch, and returns a LogicTensor over those variables.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pullback
from pullback import Tensor, nn
from pullback.dispatch import apply
from pullback.errors import ShapeError

from ._logic import LogicTensor, Term, check_truth, expand_to, union_vars
from ._ops import GRID_ROWS
from .semantics import resolve


def _as_term(x: Any) -> Term:
    if isinstance(x, Term):
        return x
    if isinstance(x, Tensor):
        return Term(x, ())  # a constant individual
    raise TypeError(f"expected a Variable, Constant, term or Tensor, got {type(x).__name__}")


def _batched_inputs(terms: tuple[Term, ...]) -> tuple[list[Tensor], dict[str, int]]:
    """Each term's value broadcast over the union of the variables and flattened to
    (combinations, *features), and the union's sizes."""
    sizes = union_vars(terms)
    target = tuple(sizes)
    inputs = []
    for t in terms:
        features = tuple(t.value.shape[len(t.free_vars):])
        expanded = expand_to(t.value, t.free_vars, target)
        inputs.append(apply(GRID_ROWS, expanded, shape=(*sizes.values(), *features),
                            n_vars=len(target)))
    return inputs, sizes


class _Grounded(nn.Module):
    """A Module (or callable) applied to the cross product of its arguments' individuals."""

    def __init__(self, model: Any = None, func: Callable[..., Tensor] | None = None) -> None:
        super().__init__()
        if (model is None) == (func is None):
            raise ValueError(f"{type(self).__name__}: give exactly one of model= or func=")
        self.model = model
        self.func = func

    def _evaluate(self, terms: tuple[Any, ...]) -> tuple[Tensor, dict[str, int]]:
        if not terms:
            raise ValueError(f"{type(self).__name__}: call it on at least one term")
        inputs, sizes = _batched_inputs(tuple(_as_term(t) for t in terms))
        fn = self.model if self.model is not None else self.func
        return fn(*inputs), sizes


class Predicate(_Grounded):
    """A predicate: ``P(*terms)`` is a LogicTensor of ``model(*individuals)``, which must return
    one truth value in [0, 1] per combination (shape (N,) or (N, 1)).

    Args:
        model: a Module; or ``func``, a plain callable.
        semantics: the semantics of the LogicTensors it returns.
    """

    def __init__(self, model: Any = None, func: Callable[..., Tensor] | None = None,
                 semantics: Any = "product") -> None:
        super().__init__(model, func)
        self.semantics = resolve(semantics)

    def forward(self, *terms: Any) -> LogicTensor:
        out, sizes = self._evaluate(terms)
        count = math.prod(sizes.values()) if sizes else 1
        if out.numel() != count:
            raise ShapeError(f"Predicate: the model returned shape {tuple(out.shape)} for {count} "
                             f"combinations; it must return one truth value each")
        values = check_truth(out.reshape(*sizes.values()), "Predicate", False)
        return LogicTensor._new(values, tuple(sizes), self.semantics)


class Function(_Grounded):
    """A function symbol: ``f(*terms)`` is a term with the union of the arguments' variables
    and the features the model returns."""

    def forward(self, *terms: Any) -> Term:
        out, sizes = self._evaluate(terms)
        return Term(out.reshape(*sizes.values(), *out.shape[1:]), tuple(sizes))


class NeuralRelation(Predicate):
    """A binary relation learned from embeddings: ``R(x, y) = sigmoid(MLP([x, y]))``.

    Args:
        embedding_dim: the features of one individual.
        hidden: the hidden width of the MLP.
        semantics: as :class:`Predicate`.
    """

    def __init__(self, embedding_dim: int, hidden: int = 32, semantics: Any = "product") -> None:
        mlp = nn.Sequential(nn.Linear(2 * embedding_dim, hidden), nn.ReLU(),
                            nn.Linear(hidden, 1), nn.Sigmoid())
        super().__init__(model=_Concat(mlp), semantics=semantics)


class _Concat(nn.Module):
    def __init__(self, mlp: nn.Module) -> None:
        super().__init__()
        self.mlp = mlp

    def forward(self, x: Tensor, y: Tensor) -> Tensor:
        return self.mlp(pullback.cat([x, y], 1))
