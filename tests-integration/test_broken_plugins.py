"""Plugins that cannot load, installed with pip: one raises on import, one was built for another
hook API. ``import pullback`` still works, each is reported with its distribution and error, and
a good plugin installed next to them keeps working."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.venv

BROKEN = '''
    raise ImportError("cannot import name 'kernels' from 'libbroken'")
'''

FUTURE = '''
    from pullback.hookspecs import hookimpl

    pullback_hook_api = "2.0"

    @hookimpl
    def register_backends(register):
        raise AssertionError("a refused plugin's hooks must never run")
'''


@pytest.fixture
def venv(make_venv: Any, make_project: Any, wheelhouse: Any) -> Any:
    venv = make_venv("broken")
    venv.install(
        wheelhouse.wheel("pullback"), wheelhouse.wheel("pullback-refcpu"),
        wheelhouse.wheel(make_project("pullback-broken", "broken_plugin", BROKEN)),
        wheelhouse.wheel(make_project("pullback-future", "future_plugin", FUTURE, "3.0.0")),
    )
    return venv


def test_import_pullback_survives_and_warns_once_per_bad_plugin(venv: Any) -> None:
    result = venv.python_ok('''
        import pullback as pb
        x = pb.tensor([1.0, 2.0], device="refcpu", requires_grad=True)
        (x * x).sum().backward()
        print(x.grad.tolist(), x.grad.device)
    ''')
    assert result.stdout.strip() == "[2.0, 4.0] refcpu:0"
    warnings = [line for line in result.stderr.splitlines() if "PluginWarning" in line]
    assert len(warnings) == 2, result.stderr
    assert ("PluginWarning: pullback: plugin 'broken' from pullback-broken 0.1.0 failed to load "
            "and was skipped: ImportError: cannot import name 'kernels' from 'libbroken'"
            in warnings[0])
    assert ("PluginWarning: pullback: plugin 'future' from pullback-future 3.0.0 failed to load "
            "and was skipped: PluginError: plugin 'future' (pullback-future) was built for "
            "pullback hook API 2.0, but this core provides 1.0" in warnings[1])


def test_the_cli_reports_the_failures_and_the_working_plugin(venv: Any) -> None:
    result = venv.run("-m", "pullback", "plugins", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["plugins"]}
    assert {name: row["status"] for name, row in rows.items()} == {
        "pullback": "loaded", "refcpu": "loaded", "broken": "failed", "future": "failed"}
    assert rows["broken"]["distribution"] == "pullback-broken"
    assert rows["broken"]["error"].startswith("ImportError: cannot import name 'kernels'")
    assert "hook API 2.0" in rows["future"]["error"]

    table = venv.run("-m", "pullback", "plugins").stdout
    assert "Failed to load (pullback works without them):" in table
    assert "  broken (pullback-broken 0.1.0): ImportError: cannot import name 'kernels'" in table


def test_disabling_the_bad_plugins_silences_them(venv: Any) -> None:
    result = venv.python_ok("import pullback; print(sorted(pullback.plugins.records()))",
                            env={"PULLBACK_DISABLE_PLUGINS": "broken,pullback-future"})
    assert result.stdout.strip() == "['pullback', 'refcpu']"
    assert result.stderr == ""
