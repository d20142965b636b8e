"""pullback-avyaya is still empty: it installs, is discovered as a plugin, and registers nothing."""

from __future__ import annotations

from pullback.avyaya.__about__ import __version__
from pullback.testing.packaging import assert_empty_plugin


def test_installed_discovered_and_registers_nothing() -> None:
    assert_empty_plugin("pullback-avyaya", __version__, {"avyaya": "pullback.avyaya._plugin"})
