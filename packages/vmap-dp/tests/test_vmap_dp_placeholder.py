"""pullback-vmap-dp is still empty: it installs, is discovered as a plugin, and registers nothing."""

from __future__ import annotations

from pullback.func.__about__ import __version__
from pullback.testing.packaging import assert_empty_plugin


def test_installed_discovered_and_registers_nothing() -> None:
    assert_empty_plugin(
        "pullback-vmap-dp", __version__, {"func": "pullback.func._plugin", "dp": "pullback.dp._plugin"}
    )
