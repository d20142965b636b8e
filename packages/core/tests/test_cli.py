"""``python -m pullback plugins`` and the ``pullback`` console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import types
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback._cli import main
from pullback.hookspecs import hookimpl
from pullback.registry import Op


@pytest.fixture
def registered_everything(throwaway_plugin: Any, numpy_backend: Any) -> None:
    """A throw-away plugin that registers one thing of every kind, and a second backend that is
    unavailable."""
    plugin = types.ModuleType("tp_plugin")
    plugin.pullback_hook_api = "1.0"

    def register_backends(register: Any) -> None:
        register(numpy_backend("refnp", count=2))
        register(numpy_backend("offnp", available=False, reason="no offnp driver"))

    plugin.register_backends = hookimpl(register_backends)
    plugin.register_ops = hookimpl(lambda register: register(Op("tp.twice", lambda xp: lambda x: 2 * x)))
    plugin.register_kernels = hookimpl(lambda register: register("exp", "refnp", np.exp))
    plugin.register_rules = hookimpl(lambda register: register("tp.twice", "c99", "2 * x"))
    plugin.register_graph_passes = hookimpl(lambda register: register("tp.fold", lambda g: g))
    plugin.register_exporters = hookimpl(lambda register: register("tp.fmt", lambda m, p: None))
    throwaway_plugin(plugin, "tp", "pullback-tp")


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["plugins", *args]) == 0
    return capsys.readouterr().out


def test_json_report_lists_what_each_plugin_registered(
        capsys: pytest.CaptureFixture[str], registered_everything: None) -> None:
    report = json.loads(run_main(capsys, "--json"))
    assert report["pullback"] == pb.__version__ and report["hook_api"] == "1.0"
    rows = {row["name"]: row for row in report["plugins"]}
    assert report["plugins"][0]["distribution"] == "pullback"  # core first
    core = rows["pullback"]
    assert core["status"] == "loaded" and core["error"] is None
    assert core["registered"]["backends"] == [
        {"name": "cpu", "available": True, "device_count": 1, "reason": None,
         "gemm": pb.backends.backends()["cpu"].gemm_provider()}]
    assert core["registered"]["backends"][0]["gemm"] in ("mkl", "numpy")
    assert len(core["registered"]["ops"]) == len(pb.plugins.records()["pullback"].registered["ops"])
    assert rows["tp"] == {
        "name": "tp", "distribution": "pullback-tp", "version": "", "module": "tp_plugin",
        "status": "loaded", "error": None,
        "registered": {
            "backends": [
                {"name": "refnp", "available": True, "device_count": 2, "reason": None,
                 "gemm": None},
                {"name": "offnp", "available": False, "device_count": 0,
                 "reason": "no offnp driver", "gemm": None},
            ],
            "ops": ["tp.twice"], "kernels": ["exp[refnp]"], "rules": ["tp.twice:c99"],
            "graph_passes": ["tp.fold"], "exporters": ["tp.fmt"],
        },
    }


def test_table_report_is_one_readable_line_per_plugin(
        capsys: pytest.CaptureFixture[str], registered_everything: None) -> None:
    out = run_main(capsys)
    lines = out.splitlines()
    assert lines[0] == f"pullback {pb.__version__} (hook API 1.0)"
    assert lines[2].split() == ["plugin", "distribution", "version", "status", "registered"]
    (tp_line,) = [line for line in lines if line.startswith("tp ")]
    assert tp_line.split()[:4] == ["tp", "pullback-tp", "-", "loaded"]
    assert ("backends (2): refnp [available, 2 devices], offnp [unavailable: no offnp driver]; "
            "ops (1): tp.twice; kernels (1): exp[refnp]; rules (1): tp.twice:c99; "
            "graph passes (1): tp.fold; exporters (1): tp.fmt") in tp_line
    (core_line,) = [line for line in lines if line.startswith("pullback ") and "loaded" in line]
    n_ops = len(pb.plugins.records()["pullback"].registered["ops"])
    assert f"ops ({n_ops}): " in core_line and core_line.endswith(", ...")
    gemm = pb.backends.backends()["cpu"].gemm_provider()
    assert f"cpu [available, 1 device, GEMM: {gemm}]" in core_line
    verbose = run_main(capsys, "--verbose")
    assert not any(line.endswith(", ...") for line in verbose.splitlines())


def test_failed_and_disabled_plugins_are_listed(fake_site: Any) -> None:
    fake_site.add_distribution("pullback-broken", {"broken": "broken_plugin"},
                               {"broken_plugin": "raise ImportError('no module named libfoo')"},
                               version="0.3")
    fake_site.add_distribution("pullback-gone", {"gone": "gone_plugin"},
                               {"gone_plugin": "raise AssertionError('must not be imported')"},
                               version="1.2")
    env = {"PULLBACK_DISABLE_PLUGINS": "gone"}
    result = fake_site.run("-m", "pullback", "plugins", "--json", env=env)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["plugins"]}
    assert rows["broken"]["status"] == "failed"
    assert rows["broken"]["error"] == "ImportError: no module named libfoo"
    assert rows["broken"]["distribution"] == "pullback-broken" and rows["broken"]["version"] == "0.3"
    assert rows["gone"]["status"] == "disabled" and rows["gone"]["error"] is None
    assert json.loads(result.stdout)["environment"]["PULLBACK_DISABLE_PLUGINS"] == "gone"
    assert "pullback-broken" in result.stderr  # the load warning, on stderr only

    table = fake_site.run("-m", "pullback", "plugins", env=env).stdout
    assert "Failed to load (pullback works without them):\n  broken (pullback-broken 0.3): " \
           "ImportError: no module named libfoo" in table
    assert "Disabled by the environment (PULLBACK_DISABLE_PLUGINS=gone): gone" in table


def test_the_console_script_is_installed_and_reports_the_installed_version() -> None:
    script = shutil.which("pullback", path=str(Path(sys.executable).parent))
    assert script is not None, "the `pullback` console script is not installed next to python"
    result = subprocess.run([script, "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    assert result.stdout.strip() == f"pullback {metadata.version('pullback')}"
    listing = subprocess.run([script, "plugins", "--json"], capture_output=True, text=True,
                             timeout=60)
    assert json.loads(listing.stdout)["plugins"][0]["name"] == "pullback"


def test_a_missing_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "usage: pullback" in capsys.readouterr().err
