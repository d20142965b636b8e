"""Core's own plugin: the CPU backend and core's ops register through the public hooks."""

from __future__ import annotations

from typing import Any, Callable

from .hookspecs import hookimpl

pullback_hook_api = "1.0"


@hookimpl
def register_backends(register: Callable[[Any], None]) -> None:
    from ._cpu import CPUBackend

    register(CPUBackend())


@hookimpl
def register_ops(register: Callable[[Any], None]) -> None:
    from ._ops._declare import CORE_OPS

    for op in CORE_OPS:
        register(op)
