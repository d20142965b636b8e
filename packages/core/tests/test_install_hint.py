"""The one-line hint for a missing distribution: the clone's folder from a clone, the name
elsewhere; ``import pullback.<name>`` of a distribution that is not installed says it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import pullback
from pullback import _install_hint
from pullback.errors import MissingPackageError

FAKE_DISTRIBUTION = "pullback-not-installed-anywhere"


@pytest.fixture
def outside_any_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As if core were installed from a wheel and the current directory were no clone."""
    monkeypatch.setattr(_install_hint, "_CORE", tmp_path / "site-packages" / "pullback")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def fake_subpackage(monkeypatch: pytest.MonkeyPatch) -> str:
    """pullback.hint_probe, provided by a distribution that is not installed."""
    monkeypatch.setitem(_install_hint.SUBPACKAGES, "hint_probe", FAKE_DISTRIBUTION)
    return "hint_probe"


def test_outside_a_clone_the_hint_is_the_distribution_name(outside_any_clone: None) -> None:
    assert _install_hint.clone_root() is None
    assert _install_hint.install_command("pullback-nn") == "pip install pullback-nn"
    assert _install_hint.install_command("pullback-cuda", "[cuda12]") == \
        "pip install 'pullback-cuda[cuda12]'"


def test_from_a_clone_the_hint_is_the_folder_of_the_distribution(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clone = tmp_path / "clone"
    for folder, name in (("core", "pullback"), ("nn", "pullback-nn")):
        (clone / "packages" / folder).mkdir(parents=True)
        (clone / "packages" / folder / "pyproject.toml").write_text(
            f'[build-system]\nrequires = ["hatchling"]\n\n[project]\nname = "{name}"\n')
    monkeypatch.chdir(clone / "packages")  # anywhere inside the clone
    # core installed from a wheel: a plain install of the folder
    monkeypatch.setattr(_install_hint, "_CORE", tmp_path / "site-packages" / "pullback")
    assert _install_hint.install_command("pullback-nn") == \
        f"pip install {clone / 'packages' / 'nn'}"
    # core installed editable from this clone: an editable install, as core's
    monkeypatch.setattr(_install_hint, "_CORE", clone / "packages" / "core" / "src" / "pullback")
    assert _install_hint.install_command("pullback-nn") == \
        f"pip install -e {clone / 'packages' / 'nn'}"
    # a distribution the clone does not hold: its name
    assert _install_hint.install_command(FAKE_DISTRIBUTION) == f"pip install {FAKE_DISTRIBUTION}"


def test_importing_a_subpackage_that_is_not_installed_names_its_distribution(
        fake_subpackage: str, outside_any_clone: None) -> None:
    message = (f"pullback.{fake_subpackage} is provided by {FAKE_DISTRIBUTION}, which is not "
               f"installed: pip install {FAKE_DISTRIBUTION}")
    with pytest.raises(MissingPackageError, match=message) as info:
        __import__(f"pullback.{fake_subpackage}")
    assert isinstance(info.value, ModuleNotFoundError)  # optional-part probes treat it as absent
    with pytest.raises(MissingPackageError, match=message):  # not "cannot import name"
        exec(f"from pullback import {fake_subpackage}", {})
    assert not hasattr(pullback, fake_subpackage)
    with pytest.raises(pytest.skip.Exception, match=FAKE_DISTRIBUTION):
        pytest.importorskip(f"pullback.{fake_subpackage}")


def test_unknown_names_and_installed_distributions_are_left_to_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModuleNotFoundError, match="No module named 'pullback.no_such_thing'"):
        __import__("pullback.no_such_thing")
    # provided by an installed distribution (core itself) yet absent: Python's own error
    monkeypatch.setitem(_install_hint.SUBPACKAGES, "hint_probe_installed", "pullback")
    with pytest.raises(ModuleNotFoundError, match="No module named 'pullback.hint_probe_installed'"):
        __import__("pullback.hint_probe_installed")


def test_the_table_of_subpackages_matches_the_clone() -> None:
    """Every pullback.<name> folder of packages/*/src names its distribution in the table."""
    root = _install_hint.clone_root()
    if root is None:
        pytest.skip("not running from a clone of the monorepo")
    found = {}
    for name, folder in _install_hint._project_folders(root).items():
        for sub in (folder / "src" / "pullback").iterdir():
            if sub.is_dir() and sub.name != "__pycache__" and name != "pullback":
                found[sub.name] = name
    assert found == {k: v for k, v in _install_hint.SUBPACKAGES.items() if k in found}
    assert set(found) <= set(_install_hint.SUBPACKAGES)


def test_a_fresh_interpreter_gets_the_hint() -> None:
    code = ("from pullback import _install_hint as h\n"
            f"h.SUBPACKAGES['hint_probe'] = {FAKE_DISTRIBUTION!r}\n"
            "from pullback import hint_probe\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith(
        "pullback._install_hint.MissingSubpackageError: pullback.hint_probe is provided by "
        f"{FAKE_DISTRIBUTION}, which is not installed: pip install")
