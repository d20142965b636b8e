"""What each distribution's wheel contains: core ships ``pullback/`` (with its ``__init__.py``)
and nothing of the plugins; every plugin ships only its own ``pullback/<subpackage>/`` folders,
never a ``pullback/__init__.py`` that would shadow core's; versions come from ``__about__.py``."""

from __future__ import annotations

import email
import re
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

PACKAGES = Path(__file__).resolve().parents[1] / "packages"
FOLDERS = sorted(p.parent.name for p in PACKAGES.glob("*/pyproject.toml"))


def subpackages(folder: Path) -> set[str]:
    """The ``pullback.<name>`` folders a plugin project has under src/pullback/."""
    return {p.name for p in (folder / "src" / "pullback").iterdir()
            if p.is_dir() and p.name != "__pycache__"}


def about_version(folder: Path, pyproject: dict[str, Any]) -> str:
    path = folder / pyproject["tool"]["hatch"]["version"]["path"]
    return re.search(r'__version__ = "([^"]+)"', path.read_text()).group(1)


@pytest.mark.parametrize("folder_name", FOLDERS)
def test_the_wheel_holds_only_its_own_part_of_pullback(
        folder_name: str, wheelhouse: Any, distribution_folders: dict[str, Path]) -> None:
    folder = PACKAGES / folder_name
    pyproject = tomllib.loads((folder / "pyproject.toml").read_text())
    dist = pyproject["project"]["name"]
    version = about_version(folder, pyproject)
    wheel = wheelhouse.wheel(dist)
    names = zipfile.ZipFile(wheel).namelist()
    info = f"{dist.replace('-', '_')}-{version}.dist-info/"
    payload = [n for n in names if not n.startswith(info)]
    assert wheel.name == f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
    assert payload, f"{dist}'s wheel holds no code"
    if dist == "pullback":
        others = {sub for d, f in distribution_folders.items() if d != "pullback"
                  for sub in subpackages(f)}
        assert "pullback/__init__.py" in payload
        assert all(n.startswith("pullback/") for n in payload)
        assert not [n for n in payload if n.split("/")[1] in others]
    else:
        assert "pullback/__init__.py" not in payload
        own = subpackages(folder)
        assert {n.split("/")[1] for n in payload} == own
        assert all(n.startswith("pullback/") and n.count("/") >= 2 for n in payload)
    assert not [n for n in payload if "__pycache__" in n or n.endswith(".pyc")]


@pytest.mark.parametrize("folder_name", FOLDERS)
def test_the_wheel_metadata_matches_the_project(folder_name: str, wheelhouse: Any) -> None:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    def normal(text: str) -> tuple[str, str, str]:
        requirement = Requirement(text)
        return canonicalize_name(requirement.name), str(requirement.specifier), str(requirement.marker)

    project = tomllib.loads((PACKAGES / folder_name / "pyproject.toml").read_text())["project"]
    wheel = zipfile.ZipFile(wheelhouse.wheel(project["name"]))
    info = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = email.message_from_bytes(wheel.read(info))
    assert meta["Name"] == project["name"]
    declared = {normal(r) for r in project.get("dependencies", [])}
    shipped = {normal(r) for r in meta.get_all("Requires-Dist") or []
               if "extra ==" not in r}
    assert shipped == declared
    assert set(meta.get_all("Provides-Extra") or []) == set(project.get("optional-dependencies", {}))
    entry_points = wheel.read(info.replace("METADATA", "entry_points.txt")).decode()
    for name, target in project.get("entry-points", {}).get("pullback", {}).items():
        assert f"{name} = {target}" in entry_points
