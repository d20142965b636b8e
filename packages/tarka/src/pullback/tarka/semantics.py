"""Semantics: which connectives ``&``, ``|``, ``~``, ``>>`` and ``^`` of a LogicTensor mean.

Three families, by name: ``"product"`` (the default, with LTN's stable variants and the
Reichenbach implication), ``"lukasiewicz"`` and ``"goedel"``. Any :class:`Semantics` object may be
given instead, e.g. product logic with the Goguen implication.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import fuzzy

IMPLICATIONS: dict[str, Any] = {
    "reichenbach": fuzzy.ImpliesReichenbach,
    "goguen": fuzzy.ImpliesGoguen,
    "kleene_dienes": fuzzy.ImpliesKleeneDienes,
    "goedel": fuzzy.ImpliesGodel,
    "lukasiewicz": fuzzy.ImpliesLuk,
}


@dataclass(frozen=True)
class Semantics:
    """The connectives of one fuzzy logic (each a callable on truth-value Tensors)."""

    name: str
    and_: Any
    or_: Any
    not_: Any = field(default_factory=fuzzy.NotStandard)
    implies: Any = None

    @property
    def equiv(self) -> Any:
        return fuzzy.Equiv(self.and_, self.implies)

    def with_implication(self, implication: str, **options: Any) -> Semantics:
        """The same logic with another implication (``"reichenbach"``, ``"goguen"``,
        ``"kleene_dienes"``, ``"goedel"`` or ``"lukasiewicz"``)."""
        if implication not in IMPLICATIONS:
            raise ValueError(f"unknown implication {implication!r} (known: "
                             f"{', '.join(sorted(IMPLICATIONS))})")
        return Semantics(f"{self.name}+{implication}", self.and_, self.or_, self.not_,
                         IMPLICATIONS[implication](**options))


def product(stable: bool = True) -> Semantics:
    """Product real logic (LTN's default): product t-norm, probabilistic sum, standard
    negation, Reichenbach implication; ``stable`` as LTN's projections."""
    return Semantics("product" if stable else "product(stable=False)", fuzzy.AndProd(stable),
                     fuzzy.OrProbSum(stable), fuzzy.NotStandard(),
                     fuzzy.ImpliesReichenbach(stable))


def lukasiewicz() -> Semantics:
    """Lukasiewicz logic: bounded sum and difference, its residual implication."""
    return Semantics("lukasiewicz", fuzzy.AndLuk(), fuzzy.OrLuk(), fuzzy.NotStandard(),
                     fuzzy.ImpliesLuk())


def goedel() -> Semantics:
    """Goedel logic: min, max, standard negation, Goedel's implication."""
    return Semantics("goedel", fuzzy.AndMin(), fuzzy.OrMax(), fuzzy.NotStandard(),
                     fuzzy.ImpliesGodel())


SEMANTICS: dict[str, Any] = {"product": product, "lukasiewicz": lukasiewicz, "goedel": goedel}


def resolve(semantics: Any) -> Semantics:
    """A Semantics object from a name or an object; an unknown name is a ValueError listing the
    known ones."""
    if isinstance(semantics, Semantics):
        return semantics
    if semantics not in SEMANTICS:
        raise ValueError(f"unknown semantics {semantics!r} (known: {', '.join(sorted(SEMANTICS))}, "
                         "or a tarka.semantics.Semantics object)")
    return SEMANTICS[semantics]()
