"""examples/compile_training_step.py --smoke: the compiled GPT step gives the eager losses and
the script reports both step times and the speed-up."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "compile_training_step.py"
MISSING_DATA = 2


def test_smoke_run_agrees_with_eager_and_reports_the_speed_up(tmp_path: Path) -> None:
    pytest.importorskip("pullback.compiler", reason="the example needs pullback-compiler")
    result = subprocess.run([sys.executable, str(EXAMPLE), "--smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == MISSING_DATA:
        pytest.skip(f"TinyShakespeare is not here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    difference = float(re.search(r"largest relative loss difference (\S+)", result.stdout)[1])
    assert difference <= 1e-5, result.stdout
    assert re.search(r"speed-up \d+\.\d+x", result.stdout), result.stdout
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert rows[0].startswith("step,loss") and len(rows) == 21  # header and 20 steps
