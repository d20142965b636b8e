"""pullback-spanda is still empty: it installs, is discovered as a plugin, and registers nothing."""

from __future__ import annotations

from importlib import metadata

from pullback import plugins
from pullback.spanda.__about__ import __version__

DISTRIBUTION = "pullback-spanda"
ENTRY_POINTS = {"spanda": "pullback.spanda._plugin"}


def test_installed_with_the_version_of_its_about_module() -> None:
    assert metadata.version(DISTRIBUTION) == __version__


def test_its_entry_points_name_its_plugin_modules() -> None:
    found = {ep.name: ep.value for ep in metadata.entry_points(group="pullback")
             if ep.dist is not None and ep.dist.name == DISTRIBUTION}
    assert found == ENTRY_POINTS


def test_discovered_as_a_plugin_that_registers_nothing() -> None:
    for name in ENTRY_POINTS:
        record = plugins.records()[name]
        assert (record.distribution, record.version) == (DISTRIBUTION, __version__)
        assert record.registered == {}
        assert name not in plugins.failed()
