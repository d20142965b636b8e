"""Checks that a pullback package is installed and discovered as a plugin.

A package that ships only its skeleton (no ops yet) tests with one call::

    from pullback.avyaya.__about__ import __version__
    from pullback.testing.packaging import assert_empty_plugin

    def test_installs_and_registers_nothing() -> None:
        assert_empty_plugin("pullback-avyaya", __version__, {"avyaya": "pullback.avyaya._plugin"})

The checks read the installed metadata and :mod:`pullback.plugins`, so they run against the
package as installed (editable or from a wheel), with nothing but the core and that package.
"""

from __future__ import annotations

from importlib import metadata
from typing import Mapping

from .. import plugins


def assert_installed(distribution: str, version: str, entry_points: Mapping[str, str]) -> None:
    """Check ``distribution``'s installed version and its ``pullback`` entry points.

    Args:
        distribution: the distribution name (``"pullback-avyaya"``).
        version: the version it must have (the package's ``__about__.__version__``).
        entry_points: every entry point it declares in the ``pullback`` group, name to module.

    Raises:
        AssertionError: naming what differs.
    """
    installed = metadata.version(distribution)
    if installed != version:
        raise AssertionError(
            f"{distribution}: installed as version {installed}, but its __about__ says {version}"
        )
    found = {ep.name: ep.value for ep in metadata.entry_points(group="pullback")
             if ep.dist is not None and ep.dist.name == distribution}
    if found != dict(entry_points):
        raise AssertionError(
            f"{distribution}: 'pullback' entry points are {found}, expected {dict(entry_points)}"
        )


def assert_empty_plugin(distribution: str, version: str, entry_points: Mapping[str, str]) -> None:
    """Check that ``distribution`` is installed (:func:`assert_installed`) and that each of its
    plugins loaded, is recorded with its distribution and version, and registered nothing.

    Args:
        distribution: the distribution name (``"pullback-avyaya"``).
        version: the version it must have (the package's ``__about__.__version__``).
        entry_points: every entry point it declares in the ``pullback`` group, name to module.

    Raises:
        AssertionError: naming the plugin and what differs.
    """
    assert_installed(distribution, version, entry_points)
    records, failed = plugins.records(), plugins.failed()
    for name in entry_points:
        if name in failed:
            raise AssertionError(f"plugin '{name}' ({distribution}) failed to load: "
                                 f"{failed[name].error}")
        record = records.get(name)
        if record is None:
            raise AssertionError(f"plugin '{name}' ({distribution}) was not loaded")
        if (record.distribution, record.version) != (distribution, version):
            raise AssertionError(
                f"plugin '{name}' is recorded as {record.distribution} {record.version}, "
                f"expected {distribution} {version}"
            )
        if record.registered:
            raise AssertionError(
                f"plugin '{name}' ({distribution}) registered {record.registered}, expected nothing"
            )
