"""Every example in examples/ runs: each one's smallest configuration (``--smoke``) as a
subprocess, from an empty folder, so that no example can go stale. Examples are discovered
(every examples/*.py not starting with "_"): a new one is covered as soon as it exists, provided
it follows the conventions of examples/README.md (``--smoke``, ``--out DIR`` defaulting to
``runs/<example name>/``, ``--data DIR`` when it reads a data set, one line and exit status 2
when that data set is missing).

The main job of ``nox -s demo-mnist`` (the Fashion-MNIST MLP) also trains for a short while and
must be far above chance (10 %) on the 10,000 test images."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Callable

import pytest
from example_runs import EXAMPLES, MISSING_DATA, SmokeRun, run_example
from packaging.requirements import Requirement

SCRIPTS = sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))
FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


@cache
def help_text(script: Path) -> str:
    result = run_example(script, "--help", timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_there_are_examples_and_the_readme_lists_each_one() -> None:
    assert len(SCRIPTS) >= 7, [p.name for p in SCRIPTS]
    readme = (EXAMPLES / "README.md").read_text()
    rows = set(re.findall(r"^\| `([\w.]+\.py)` \|", readme, re.MULTILINE))
    scripts = {p.name for p in SCRIPTS}
    assert not scripts - rows, f"add a row for each of these to examples/README.md: {scripts - rows}"
    assert not rows - scripts, f"examples/README.md lists examples that are gone: {rows - scripts}"


def options(script: Path) -> set[str]:
    """The long options of an example's command line, read from its --help."""
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_text(script)))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_the_command_line_follows_the_conventions(script: Path) -> None:
    assert {"--smoke", "--out"} <= options(script)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_the_smoke_run_works_and_writes_under_runs(
        script: Path, smoke_run: Callable[[str], SmokeRun]) -> None:
    run = smoke_run(script.stem)
    assert "Traceback" not in run.result.stderr, run.result.stderr
    if run.result.returncode == MISSING_DATA:
        lines = run.result.stderr.strip().splitlines()
        assert len(lines) == 1, run.result.stderr
    run.succeeded()
    # everything it wrote is in runs/<name>/ of the folder it ran in
    assert [p.name for p in run.folder.iterdir()] == ["runs"]
    assert [p.name for p in (run.folder / "runs").iterdir()] == [script.stem]
    assert any(run.out.iterdir())


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_a_missing_data_set_is_one_line_not_a_traceback(script: Path, tmp_path: Path) -> None:
    if "--data" not in options(script):
        pytest.skip("reads no data set")
    nowhere = tmp_path / "no-data-here"
    result = run_example(script, "--smoke", "--data", str(nowhere), "--out", str(tmp_path / "out"))
    assert result.returncode == MISSING_DATA, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith(f"{script.name}: ") and str(nowhere) in lines[0]


def third_party_imports(script: Path) -> set[str]:
    """The top-level names of the modules ``script`` imports (or asks ``_example.require`` for)
    that are neither the standard library, NumPy, pullback, nor the examples' own helpers."""
    names = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require":
            names.add(node.args[0].value.split(".")[0])  # _example.require("sklearn...")
    return {n for n in names if n not in sys.stdlib_module_names and not n.startswith("_")
            and n not in ("numpy", "pullback")}


OPTIONAL = sorted((name, script) for script in SCRIPTS for name in third_party_imports(script))
DISTRIBUTION = {"sklearn": "scikit-learn"}  # import name -> the name pip installs


def test_the_readme_install_brings_every_package_an_example_imports() -> None:
    root = EXAMPLES.parent
    lines = [line.split("#")[0].strip() for line in (root / "requirements.txt").read_text()
             .splitlines()]
    brought = {canonical(line) for line in lines if line and not line.startswith("./")}
    for folder in (line for line in lines if line.startswith("./")):
        project = tomllib.loads((root / folder / "pyproject.toml").read_text())["project"]
        brought |= {canonical(Requirement(r).name) for r in project.get("dependencies", [])}
    needed = {canonical(DISTRIBUTION.get(name, name)) for name, _ in OPTIONAL}
    assert needed and needed <= brought, f"requirements.txt lacks {needed - brought}"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(name).name).lower()


# An example run with an optional package hidden, as if it were not installed.
HIDDEN = """
import runpy, sys
sys.modules[sys.argv[1]] = None  # import raises ModuleNotFoundError
script = sys.argv[2]
sys.path.insert(0, str(__import__("pathlib").Path(script).parent))
sys.argv = [script, *sys.argv[3:]]
runpy.run_path(script, run_name="__main__")
"""


@pytest.mark.parametrize("name, script", [(n, s) for n, s in OPTIONAL
                                          if f'require("{n}' in s.read_text()],
                         ids=lambda v: getattr(v, "stem", v))
def test_an_example_without_its_optional_package_says_so_in_one_line(
        name: str, script: Path, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", HIDDEN, name, str(script), "--smoke", "--out",
                             str(tmp_path)], capture_output=True, text=True, timeout=600)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == MISSING_DATA and len(lines) == 1, result.stderr
    assert f"pip install {DISTRIBUTION.get(name, name)}" in lines[0]


def test_the_fashion_mnist_mlp_learns(tmp_path: Path) -> None:
    if not list(FASHION_MNIST.glob("t10k-images-idx3-ubyte*")):
        pytest.skip(f"Fashion-MNIST is not in {FASHION_MNIST} (apt-get install dataset-fashion-mnist)")
    result = run_example(EXAMPLES / "fashion_mnist_mlp.py", "--epochs", "1",
                         "--steps-per-epoch", "150", "--out", str(tmp_path), timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["steps"] == 150
    assert summary["test_accuracy"] > 0.7, summary
    assert (tmp_path / "metrics.csv").is_file() and (tmp_path / "curves.png").is_file()
