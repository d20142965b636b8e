"""pullback-tarka is still empty: it installs, is discovered as a plugin, and registers nothing."""

from __future__ import annotations

from pullback.tarka.__about__ import __version__
from pullback.testing.packaging import assert_empty_plugin


def test_installed_discovered_and_registers_nothing() -> None:
    assert_empty_plugin("pullback-tarka", __version__, {"tarka": "pullback.tarka._plugin"})
