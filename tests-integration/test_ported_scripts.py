"""The ported corpus (tests-integration/ported/, listed in programs.py): each program runs
under pullback with only its imports changed, and reaches torch's final metrics in its small
configuration within the tolerance set from torch's own run-to-run noise."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

PORTED = Path(__file__).resolve().parent / "ported"
sys.path.insert(0, str(PORTED))
spec = importlib.util.spec_from_file_location("ported_compare", PORTED / "compare.py")
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)
from port import port  # noqa: E402
from programs import PROGRAMS  # noqa: E402


def _sources() -> list[Path]:
    """Every file of every program (a program in a folder is all the .py files in it)."""
    files: set[Path] = set()
    for program in PROGRAMS:
        for step in program.steps:
            script = PORTED / step.script
            files |= set(script.parent.rglob("*.py")) if script.parent != PORTED else {script}
    return sorted(files)


@pytest.mark.parametrize("source", _sources(), ids=lambda p: str(p.relative_to(PORTED)))
def test_the_port_changes_only_import_lines(source: Path) -> None:
    lines = source.read_text().splitlines()
    ported = port("\n".join(lines) + "\n").splitlines()
    assert len(lines) == len(ported)
    for before, after in [(a, b) for a, b in zip(lines, ported) if a != b]:
        assert before.lstrip().startswith(("import torch", "from torch")), before
        assert "torch." not in after.split(" as ")[0] and "pullback" in after, after


def test_the_corpus_holds_at_least_15_open_source_programs() -> None:
    origins = {p.origin for p in PROGRAMS if p.origin != "house"}
    programs = {p.steps[-1].script.split("/")[0] for p in PROGRAMS if p.origin != "house"}
    assert len(programs) >= 15, programs
    assert len(origins) >= 15 or len({o.split("/tree/")[0] for o in origins}) >= 4
    kinds = {p.kind for p in PROGRAMS}
    assert {"vision", "language", "generative", "reinforcement learning", "graph"} <= kinds


@pytest.mark.parametrize("name", [p.name for p in PROGRAMS])
def test_the_ported_program_reaches_torchs_metrics(name: str) -> None:
    pytest.importorskip("torch", reason="the reference runs need PyTorch")
    program = compare.BY_NAME[name]
    missing = compare.missing_needs(program)
    if missing:
        pytest.skip(f"{name} needs {', '.join(missing)}")
    rows = compare.compare(program, smoke=True, seeds=1)
    assert len(rows) == len(program.floors) + 1
    for row in rows:
        assert row.get("within", True), row
