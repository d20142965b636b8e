"""pullback-compiler's plugin: its graph passes, its fused ops and their rules, through the
public hooks."""

from __future__ import annotations

from typing import Any, Callable

from pullback.hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_graph_passes(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from .passes._registry import PASSES

    for name, graph_pass in PASSES.items():
        register(name, graph_pass)
