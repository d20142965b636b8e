"""Pytrees: nested tuples, lists, namedtuples and dicts of leaves (tensors, numbers, None).

The transforms take and return pytrees the way ``torch.func`` and JAX do: ``in_dims`` is a
prefix of the arguments' tree, outputs may be any tree of tensors.
"""

from __future__ import annotations

from typing import Any, Callable


class TreeSpec:
    """The structure of a pytree: its node type, keys and children's specs (a leaf has none)."""

    __slots__ = ("kind", "keys", "children", "num_leaves")

    def __init__(self, kind: Any, keys: Any, children: list[TreeSpec]) -> None:
        self.kind = kind
        self.keys = keys
        self.children = children
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in children)

    @property
    def is_leaf(self) -> bool:
        return self.kind is None

    def __repr__(self) -> str:
        if self.kind is None:
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        return f"{getattr(self.kind, '__name__', self.kind)}({inner})"


_LEAF = TreeSpec(None, None, [])


def _node(tree: Any) -> tuple[Any, Any, list[Any]] | None:
    """(kind, keys, children) of a container, or None for a leaf."""
    if isinstance(tree, dict):
        return dict, list(tree), list(tree.values())
    if isinstance(tree, tuple):
        return type(tree), None, list(tree)
    if isinstance(tree, list):
        return list, None, list(tree)
    return None


def tree_flatten(tree: Any) -> tuple[list[Any], TreeSpec]:
    """The leaves of ``tree`` in order, and its spec."""
    leaves: list[Any] = []

    def walk(t: Any) -> TreeSpec:
        node = _node(t)
        if node is None:
            leaves.append(t)
            return _LEAF
        kind, keys, children = node
        return TreeSpec(kind, keys, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves: list[Any], spec: TreeSpec) -> Any:
    """Rebuild a tree of ``spec``'s structure from ``leaves``."""
    it = iter(leaves)

    def build(s: TreeSpec) -> Any:
        if s.kind is None:
            return next(it)
        children = [build(c) for c in s.children]
        if s.kind is dict:
            return dict(zip(s.keys, children))
        if s.kind is list:
            return children
        if s.kind is tuple:
            return tuple(children)
        return s.kind(*children)  # a namedtuple

    return build(spec)


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_prefix(prefix: Any, tree: Any, what: str) -> list[Any]:
    """One entry of ``prefix`` per leaf of ``tree``: a leaf of ``prefix`` (an int or None) covers
    the whole subtree at its place, as ``in_dims`` does in ``torch.func.vmap`` and JAX."""
    out: list[Any] = []

    def walk(p: Any, t: Any, path: str) -> None:
        pnode = _node(p)
        if pnode is None:
            out.extend([p] * tree_flatten(t)[1].num_leaves)
            return
        tnode = _node(t)
        pkind, pkeys, pchildren = pnode
        if tnode is None or (pkind is dict) != (tnode[0] is dict) or len(pchildren) != len(tnode[2]):
            raise ValueError(
                f"{what}: the structure {_describe(p)} does not match the argument {path or '(all)'} "
                f"of structure {_describe(t)}"
            )
        _, tkeys, tchildren = tnode
        if pkind is dict:
            if set(pkeys) != set(tkeys):
                raise ValueError(f"{what}: keys {sorted(map(str, pkeys))} do not match the "
                                 f"argument's keys {sorted(map(str, tkeys))} at {path or '(all)'}")
            for k in tkeys:
                walk(p[k], t[k], f"{path}[{k!r}]")
        else:
            for i, (pc, tc) in enumerate(zip(pchildren, tchildren)):
                walk(pc, tc, f"{path}[{i}]")

    walk(prefix, tree, "")
    return out


def _describe(tree: Any) -> str:
    return repr(tree_flatten(tree)[1])
