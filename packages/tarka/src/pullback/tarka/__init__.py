"""pullback.tarka: differentiable first-order logic inside autograd.

Truth values in [0, 1] (:class:`LogicTensor`) carry their free variables and a semantics
(product, Lukasiewicz, Goedel); ``&``, ``|``, ``~``, ``>>`` and ``^`` combine them, broadcasting
over variables; :func:`forall` and :func:`exists` aggregate variables away; predicates and
functions are Modules grounded on :class:`Variable` individuals (Logic Tensor Networks' model).
:mod:`~pullback.tarka.axioms` gives ready-made axioms as loss terms, and :class:`SemanticLoss`
the exact semantic loss of propositional constraints.

Example:
    >>> import pullback
    >>> from pullback import tarka
    >>> x = tarka.Variable("x", pullback.tensor([[0.2], [0.9], [0.6]]))
    >>> big = tarka.Predicate(func=lambda v: v[:, 0])
    >>> round(tarka.forall(x, big(x) | ~big(x), agg="min").item(), 2)  # product semantics
    0.76
"""

from . import axioms, fuzzy, semantics
from .__about__ import __version__
from ._circuit import CompilationLimitError
from ._grounding import Function, NeuralRelation, Predicate
from ._logic import Constant, LogicTensor, Term, Variable, diag
from ._quantifiers import AGGREGATORS, aggregator, exists, forall, quantify, sat_agg
from .semantic_loss import CNF, Constraint, ExactlyOne, SemanticLoss

__all__ = [
    "AGGREGATORS", "CNF", "CompilationLimitError", "Constant", "Constraint", "ExactlyOne",
    "Function", "LogicTensor", "NeuralRelation", "Predicate", "SemanticLoss", "Term", "Variable",
    "__version__", "aggregator", "axioms", "diag", "exists", "forall", "fuzzy", "quantify",
    "sat_agg", "semantics",
]
