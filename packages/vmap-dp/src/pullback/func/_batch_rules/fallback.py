"""The loop fallback: a batching rule that runs an op once per sample and stacks the results.

It is correct for any op, and slow: the number of ops dispatched grows with the batch. No op
uses it unless a plugin registers it as the op's ``"batch"`` rule (for an op it cannot batch
yet); each op that runs through it warns once, naming the op.
"""

from __future__ import annotations

import warnings
from typing import Any

from pullback.dispatch import apply
from pullback.registry import Op, get_op
from pullback.tensor import Tensor

GETITEM = get_op("getitem")
STACK = get_op("stack")


class VmapFallbackWarning(UserWarning):
    """An op was batched by running it once per sample (see :func:`loop_fallback`)."""


_warned: set[str] = set()


def loop_fallback(op: Op, args: tuple[Any, ...], bdims: tuple[Any, ...], size: int, /,
                  **attrs: Any) -> tuple[Any, Any]:
    """Batch ``op`` by a Python loop over the samples (warns once per op)."""
    if op.name not in _warned:
        _warned.add(op.name)
        warnings.warn(f"vmap: op '{op.name}' has no batching rule of its own and runs once per "
                      "sample (the loop fallback); register a 'batch' rule to batch it",
                      VmapFallbackWarning, stacklevel=4)
    outs = []
    for i in range(size):
        sample = [a if b is None else apply(GETITEM, a, key=(slice(None),) * b + (i,))
                  for a, b in zip(args, bdims)]
        outs.append(apply(op, *sample, **attrs))
    if isinstance(outs[0], tuple):
        return (tuple(None if o[0] is None else apply(STACK, *[r[k] for r in outs], axis=0)
                      for k, o in enumerate(zip(*outs))),
                tuple(None if o[0] is None else 0 for o in zip(*outs)))
    if not isinstance(outs[0], Tensor):
        raise TypeError(f"vmap: op '{op.name}' returned {type(outs[0]).__name__}")
    return apply(STACK, *outs, axis=0), 0
