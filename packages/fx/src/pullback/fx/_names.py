"""Names: the public name of a function (``pullback.nn.functional.relu``), and the names of a
graph's values (``relu``, ``relu_1``...) that become the variables of the generated code.

pullback's functions are often made by factories (``pullback.relu.__name__`` is ``"fn"``), so
their public names are found by looking in the namespaces users call them from: the
:data:`NAMESPACES` below.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import keyword
import operator
import re
from functools import lru_cache
from typing import Any, Callable

# The namespaces whose functions fx records as call_function nodes when a Proxy reaches them
# (pullback has no __torch_function__: see _interception.py), in order of preference for a
# function that several of them hold.
NAMESPACES = ("pullback", "pullback.linalg", "pullback.nn.functional")


@lru_cache(maxsize=None)
def public_functions() -> dict[Callable[..., Any], str]:
    """Every public function of :data:`NAMESPACES` -> its public dotted name."""
    names: dict[Callable[..., Any], str] = {}
    for namespace in NAMESPACES:
        module = importlib.import_module(namespace)
        entries = sorted(vars(module).items(),
                         key=lambda item: item[0] != getattr(item[1], "__name__", None))
        for name, value in entries:
            if name.startswith("_") or not _is_pullback_function(value):
                continue
            names.setdefault(value, f"{namespace}.{name}")
    return names


def _is_pullback_function(value: Any) -> bool:
    if not (inspect.isfunction(value) or inspect.isbuiltin(value)):
        return False
    return (getattr(value, "__module__", None) or "").startswith("pullback")


def qualified_name(fn: Callable[..., Any]) -> str:
    """The dotted name code would call ``fn`` by: ``pullback.relu``, ``operator.add``,
    ``math.sqrt``, ``len``, ``my_module.my_function``."""
    public = public_functions().get(fn)
    if public is not None:
        return public
    module = getattr(fn, "__module__", None)
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    if module in (None, "builtins"):
        return name
    if module == "_operator":
        module = "operator"
    return f"{module}.{name}"


def short_name(target: Any) -> str:
    """The base of a node's name: a function's own name (``relu`` for ``pullback.relu``), a
    method's or attribute's name, a module path with dots as underscores."""
    if callable(target) and not isinstance(target, str):
        text = qualified_name(target).rpartition(".")[2]
    else:
        text = str(target)
        if text.startswith("__") and text.endswith("__"):
            text = text[2:-2]
    return _snake_case(text)


_CAMEL = re.compile(r"(?<=[a-z])([A-Z])")
_NOT_IDENTIFIER = re.compile(r"[^0-9a-zA-Z_]+")
_NUMBERED = re.compile(r"^(.*?)(?:_(\d+))?$")


def _snake_case(text: str) -> str:
    return _CAMEL.sub(r"_\1", text).lower()


# Names a variable of generated code may not take: Python's keywords and builtins, and the
# globals the generated code itself uses.
RESERVED = frozenset({*keyword.kwlist, *vars(builtins), "pullback", "operator", "math", "numpy",
                      "inf", "nan", "self"})


class Namespace:
    """Hands out unique Python identifiers: ``add``, ``add_1``, ``add_2``...; never a keyword,
    builtin or a name the generated code needs for itself."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._next_number: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        """A fresh identifier based on ``candidate``; it is taken from now on."""
        candidate = _NOT_IDENTIFIER.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = f"_{candidate}"
        base, number = _NUMBERED.match(candidate).groups()  # type: ignore[union-attr]
        if number is None or candidate in self._used:
            number = self._next_number.get(base, 0)
            if candidate in RESERVED:
                number += 1
                candidate = f"{base}_{number}"
        else:
            number = int(number)
        while candidate in self._used or candidate in RESERVED:
            number += 1
            candidate = f"{base}_{number}"
        self._used.add(candidate)
        self._next_number[base] = number
        return candidate


MAGIC_OPERATORS = {
    operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}",
    operator.floordiv: "{} // {}", operator.truediv: "{} / {}", operator.mod: "{} % {}",
    operator.pow: "{} ** {}", operator.lshift: "{} << {}", operator.rshift: "{} >> {}",
    operator.and_: "{} & {}", operator.or_: "{} | {}", operator.xor: "{} ^ {}",
    operator.matmul: "{} @ {}", operator.getitem: "{}[{}]",
    operator.eq: "{} == {}", operator.ne: "{} != {}", operator.lt: "{} < {}",
    operator.gt: "{} > {}", operator.le: "{} <= {}", operator.ge: "{} >= {}",
    operator.pos: "+{}", operator.neg: "-{}", operator.invert: "~{}",
}
