"""The monorepo's standing rules, checked on every package: the files each one carries, a single
source for its version, entry points that name real plugin modules, dependencies that are exactly
what its code imports, no torch and no pickle in shipped code, and empty packages that say so."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))
IDS = [f.name for f in FOLDERS]
# Reached only when the arrays are on a CUDA device, which means pullback-cuda is installed (it
# declares CuPy as it sees fit): CuPy itself and pullback.cuda's fused kernels.
# Imported only when a feature needs them, and declared as extras: CUDA, and data-parallel
# training (pullback-gpt under mpiexec).
# onnx: pullback-compiler's ONNX export and import, its [onnx] extra (a clear ImportError without)
OPTIONAL_IMPORTS = {"cupy", "cupyx", "pullback.cuda", "pullback.distributed", "onnx"}
# Imported inside the one function that delegates to them, whose error names the distribution to
# install when it is missing: pullback.onnx.export (torch's name) runs pullback-compiler's
# exporter; nn.utils.clip_grad_norm_ (torch's name) is pullback.optim's clipping.
DELEGATED_IMPORTS = {"pullback": {"pullback.compiler"}, "pullback-nn": {"pullback.optim"}}
# Declared and never imported: a shared library loaded with ctypes from the distribution's files
# (pullback._gemm finds MKL's libmkl_rt through importlib.metadata).
LOADED_NOT_IMPORTED = {"pullback": {"mkl"}}


def project(folder: Path) -> dict[str, Any]:
    return tomllib.loads((folder / "pyproject.toml").read_text())


def sources(folder: Path) -> list[Path]:
    return sorted((folder / "src").rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Absolute module names imported anywhere in a file (relative imports are its own)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            if node.module == "pullback":  # from pullback import nn
                names.update(f"pullback.{alias.name}" for alias in node.names)
    return names


def subpackage_owners() -> dict[str, str]:
    """``pullback.<sub>`` -> the distribution that ships it."""
    owners = {}
    for folder in FOLDERS:
        name = project(folder)["project"]["name"]
        for sub in (folder / "src" / "pullback").iterdir():
            if sub.is_dir() and sub.name != "__pycache__":
                owners[f"pullback.{sub.name}"] = name
    return owners


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_each_package_carries_its_files_and_one_version(folder: Path) -> None:
    meta = project(folder)
    assert meta["project"]["dynamic"] == ["version"]
    about = folder / meta["tool"]["hatch"]["version"]["path"]
    version = re.fullmatch(r'__version__ = "([^"]+)"\n', about.read_text()).group(1)
    assert meta["project"]["readme"] == "README.md" and (folder / "README.md").is_file()
    changelog = (folder / "CHANGELOG.md").read_text()
    assert re.search(rf"^## {re.escape(version)}\b", changelog, re.M), \
        f"CHANGELOG.md of {folder.name} has no section for version {version}"
    assert "test" in meta["project"]["optional-dependencies"]
    assert list((folder / "tests").glob("test_*.py")), f"{folder.name} has no tests"


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_entry_points_name_plugin_modules_that_declare_the_hook_api(folder: Path) -> None:
    entry_points = project(folder)["project"].get("entry-points", {}).get("pullback", {})
    if folder.name == "core":
        assert not entry_points  # core's own plugin is registered directly, before any other
        return
    assert entry_points, f"{folder.name} declares no plugin entry point"
    for target in entry_points.values():
        module = folder / "src" / (target.replace(".", "/") + ".py")
        assert module.is_file(), f"entry point {target} of {folder.name} names no module"
        assert re.search(r'^pullback_hook_api = "1\.\d+"$', module.read_text(), re.M), \
            f"{target} does not declare pullback_hook_api"


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_no_torch_and_no_pickle_in_shipped_code(folder: Path) -> None:
    for path in sources(folder):
        modules = imported_modules(path)
        assert not {m for m in modules if m.split(".")[0] == "torch"}, f"{path} imports torch"
        assert not {m for m in modules if m.split(".")[0] in ("pickle", "cloudpickle", "dill")}, \
            f"{path} imports a pickle module"
        assert "allow_pickle=True" not in path.read_text(), f"{path} loads pickles"


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_dependencies_are_exactly_what_the_code_imports(folder: Path) -> None:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    meta = project(folder)["project"]
    own = meta["name"]
    declared = {canonicalize_name(Requirement(r).name) for r in meta.get("dependencies", [])}
    for_tests = {canonicalize_name(Requirement(r).name)
                 for r in meta.get("optional-dependencies", {}).get("test", [])}
    owners = subpackage_owners()
    import_owner = metadata.packages_distributions()
    needed, unknown = set(), set()
    for path in sources(folder):
        # pullback.testing (gradcheck, the conformance pytest plugin) runs under the test tools
        # of the [test] extra, so it may import them.
        testing = "testing" in path.relative_to(folder / "src").parts
        for module in imported_modules(path):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            sub = ".".join(module.split(".")[:2])
            if top in OPTIONAL_IMPORTS or sub in OPTIONAL_IMPORTS:
                continue
            if sub in DELEGATED_IMPORTS.get(own, ()):
                continue
            if top == "pullback":
                needed.add(canonicalize_name(owners.get(sub, "pullback")))
            elif top in import_owner:
                dists = {canonicalize_name(d) for d in import_owner[top]}
                if not (testing and dists <= for_tests):
                    needed.update(dists)
            else:
                unknown.add(module)
    needed.discard(canonicalize_name(own))
    assert not unknown, f"{own} imports {sorted(unknown)}, which no installed distribution provides"
    assert needed <= declared, f"{own} imports but does not declare {sorted(needed - declared)}"
    # Every plugin depends on core even when it imports nothing yet (core loads it).
    unused = declared - needed - {"pullback"} - LOADED_NOT_IMPORTED.get(own, set())
    assert not unused, f"{own} declares {sorted(unused)} but never imports them"


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_an_empty_package_says_so(folder: Path) -> None:
    files = {p.name for p in sources(folder)}
    if files - {"__init__.py", "__about__.py", "_plugin.py"}:
        return  # it has code of its own
    assert "**Status: empty.**" in (folder / "README.md").read_text()
    for plugin in (folder / "src").rglob("_plugin.py"):
        assert "@hookimpl" not in plugin.read_text(), f"{plugin} registers something"
