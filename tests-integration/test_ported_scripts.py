"""The ported PyTorch scripts (tests-integration/ported/): each runs under pullback with only
its imports changed, and reaches torch's final metrics in its small configuration."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

PORTED = Path(__file__).resolve().parent / "ported"
sys.path.insert(0, str(PORTED))
spec = importlib.util.spec_from_file_location("ported_compare", PORTED / "compare.py")
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)
from port import port  # noqa: E402


@pytest.mark.parametrize("script", sorted(compare.SCRIPTS))
def test_the_port_changes_only_import_lines(script: str) -> None:
    source = (PORTED / f"{script}.py").read_text().splitlines()
    ported = port("\n".join(source) + "\n").splitlines()
    assert len(source) == len(ported)
    changed = [(a, b) for a, b in zip(source, ported) if a != b]
    assert changed, "the script imports nothing from torch"
    for before, after in changed:
        assert before.lstrip().startswith(("import torch", "from torch")), before
        assert "torch." not in after.split(" as ")[0] and "pullback" in after, after


@pytest.mark.parametrize("script", sorted(compare.SCRIPTS))
def test_the_ported_script_reaches_torchs_metrics(script: str) -> None:
    pytest.importorskip("torch", reason="the scripts' reference runs need PyTorch")
    pytest.importorskip("sklearn", reason="the digits scripts read scikit-learn's digits")
    if script == "lstm_lm" and not (Path(os.environ.get("PULLBACK_DATA", "/nonexistent"))
                                    / "tinyshakespeare" / "input.txt").exists():
        pytest.skip("TinyShakespeare is read from $PULLBACK_DATA (nox sets it)")
    rows = compare.compare(script, smoke=True, seeds=1)
    for row in rows:
        assert row.get("within", True), row
