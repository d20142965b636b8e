"""Every example in examples/ runs: each one's smallest configuration (``--smoke``) as a
subprocess, from an empty folder, so that no example can go stale. Examples are discovered
(every examples/*.py not starting with "_"): a new one is covered as soon as it exists, provided
it follows the conventions of examples/README.md (``--smoke``, ``--out DIR`` defaulting to
``runs/<example name>/``, ``--data DIR`` when it reads a data set, one line and exit status 2
when that data set is missing).

The main job of ``nox -s demo-mnist`` (the Fashion-MNIST MLP) also trains for a short while and
must be far above chance (10 %) on the 10,000 test images."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Callable

import pytest
from example_runs import EXAMPLES, MISSING_DATA, SmokeRun, run_example

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
