"""``torch.utils.checkpoint``: activation checkpointing with PyTorch's signatures, over
:func:`pullback.autograd.checkpoint` (which recomputes the forward in backward with the random
state of the first run). ``use_reentrant``, ``preserve_rng_state``, ``context_fn``,
``determinism_check`` and ``debug`` are accepted; pullback has one implementation."""

from __future__ import annotations

import functools
from typing import Any, Callable

from ..autograd.checkpoint import checkpoint as _checkpoint

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               context_fn: Any = None, determinism_check: str = "default", debug: bool = False,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, keeping none of its activations for backward."""
    if kwargs:
        function = functools.partial(function, **kwargs)
    return _checkpoint(function, *args)


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` (a Sequential or a list of modules) in ``segments`` chunks, each but
    the last checkpointed, as PyTorch's."""
    functions = list(functions.children()) if hasattr(functions, "children") else list(functions)
    size = len(functions) // segments
    end = -1

    def run(start: int, stop: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for f in functions[start:stop + 1]:
                x = f(x)
            return x

        return forward

    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input)
    return run(end + 1, len(functions) - 1)(input)
