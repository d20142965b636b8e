"""The compiler's own passes by name (registered through the plugin hook, like anyone's)."""

from __future__ import annotations

from typing import Any, Callable

PASSES: dict[str, Callable[..., Any]] = {}


def graph_pass(name: str, exact: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: add a pass to the compiler's registry under ``name``.

    Args:
        name: the registered name.
        exact: whether the optimized graph gives bit-identical results (else within the fused
            loops' tolerance: their transcendental functions and folded sums round otherwise).
    """

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        PASSES[name] = fn
        fn.pass_name = name  # type: ignore[attr-defined]
        fn.exact = exact  # type: ignore[attr-defined]
        return fn

    return register
