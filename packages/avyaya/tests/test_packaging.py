"""pullback-avyaya installs, is discovered as a plugin, and registers no ops (its couplings are
compositions of existing ops and one autograd Function); every coupling has a test builder."""

from __future__ import annotations

from avyaya_helpers import BUILDERS

import pullback.avyaya as avyaya
from pullback.avyaya.__about__ import __version__
from pullback.testing.packaging import assert_empty_plugin


def test_installed_discovered_and_registers_nothing() -> None:
    assert_empty_plugin("pullback-avyaya", __version__, {"avyaya": "pullback.avyaya._plugin"})


def test_every_registered_coupling_is_tested() -> None:
    assert set(BUILDERS) == set(avyaya.COUPLINGS)
    for kind, cls in avyaya.COUPLINGS.items():
        assert type(BUILDERS[kind](4, 1, 0)) is cls
