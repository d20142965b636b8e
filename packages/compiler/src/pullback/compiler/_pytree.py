"""Flattening nested arguments and results (tuples, lists, dicts) into Tensors and a spec."""

from __future__ import annotations

from typing import Any

from pullback.tensor import Tensor

# A spec is ("tensor",), ("static", value), or (container kind, keys or None, child specs).


def flatten(obj: Any) -> tuple[list[Tensor], Any]:
    """The Tensors of ``obj`` in order, and a spec to rebuild ``obj`` from new Tensors."""
    leaves: list[Tensor] = []

    def walk(x: Any) -> Any:
        if isinstance(x, Tensor):
            leaves.append(x)
            return ("tensor",)
        if isinstance(x, (tuple, list)) and (type(x) in (tuple, list) or hasattr(x, "_fields")):
            return (type(x), None, tuple(walk(v) for v in x))
        if type(x) is dict:
            keys = tuple(x)
            return (dict, keys, tuple(walk(x[k]) for k in keys))
        return ("static", x)

    return leaves, walk(obj)


def unflatten(spec: Any, leaves: list[Any]) -> Any:
    """``obj`` rebuilt from ``spec`` with ``leaves`` in place of its Tensors."""
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s[0] == "tensor":
            return next(it)
        if s[0] == "static":
            return s[1]
        kind, keys, children = s
        values = [build(c) for c in children]
        if kind is dict:
            return dict(zip(keys, values))
        if hasattr(kind, "_fields"):
            return kind(*values)
        return kind(values)

    return build(spec)


def static_key(spec: Any) -> Any:
    """A hashable form of a spec (for guards); unhashable static values by identity."""
    if spec[0] == "tensor":
        return spec
    if spec[0] == "static":
        try:
            hash(spec[1])
            return spec
        except TypeError:
            return ("static-id", id(spec[1]))
    kind, keys, children = spec
    return (kind, keys, tuple(static_key(c) for c in children))
