"""Running one program under torch.fx and pullback.fx, for the tests that compare them.

A program is written once against a namespace ``t`` with ``t.lib`` (``torch`` or ``pullback``),
``t.nn``, ``t.F`` (``nn.functional``) and ``t.fx``; :func:`both` gives the two namespaces.
"""

from __future__ import annotations

import types

import pytest

import pullback
import pullback.fx
import pullback.nn
import pullback.nn.functional


def namespace(lib: types.ModuleType, nn: types.ModuleType, functional: types.ModuleType,
              fx: types.ModuleType) -> types.SimpleNamespace:
    return types.SimpleNamespace(lib=lib, nn=nn, F=functional, fx=fx)


PULLBACK = namespace(pullback, pullback.nn, pullback.nn.functional, pullback.fx)


def torch_namespace() -> types.SimpleNamespace:
    pytest.importorskip("torch", reason="torch.fx is the oracle")
    import torch
    import torch.fx
    import torch.nn.functional

    return namespace(torch, torch.nn, torch.nn.functional, torch.fx)


def both() -> tuple[types.SimpleNamespace, types.SimpleNamespace]:
    """(torch's namespace, pullback's); skips the test without torch."""
    return torch_namespace(), PULLBACK


def same_code(torch_code: str, pullback_code: str) -> None:
    """The generated sources are the same once torch's module name reads pullback (blank lines
    and trailing spaces aside: torch pads its source with them)."""
    def lines(code: str) -> list[str]:
        return [line.rstrip() for line in code.splitlines() if line.strip()]

    assert lines(pullback_code) == lines(torch_code.replace("torch", "pullback"))
