"""The hook implementations pullback calls once, when the plugin loads."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pullback.hookspecs import hookimpl

from .backend import RefCPUBackend, counted

# The hook API this plugin was written against; pullback refuses a plugin of another major.
pullback_hook_api = "1.0"


@hookimpl
def register_backends(register: Callable[[Any], None]) -> None:
    register(RefCPUBackend())


@hookimpl
def register_kernels(register: Callable[[str, str, Callable[..., Any]], None]) -> None:
    # Most ops need no kernel of their own here (their generic kernel runs on NumPy). A backend
    # registers one where it has something better, or where its namespace is not NumPy-like;
    # this one registers exp to show how (counted like the generic ones).
    register("exp", "refcpu", counted("exp", np.exp))
