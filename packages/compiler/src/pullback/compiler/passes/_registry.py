"""The compiler's own passes by name (registered through the plugin hook, like anyone's)."""

from __future__ import annotations

from typing import Any, Callable

PASSES: dict[str, Callable[..., Any]] = {}


def graph_pass(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: add a pass to the compiler's registry under ``name``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PASSES[name] = fn
        fn.pass_name = name  # type: ignore[attr-defined]
        return fn

    return register
