"""examples/reversible_deep_mlp.py --smoke: a 20-block reversible MLP learns Fashion-MNIST, and
its training step holds a fraction of the activations of the same blocks run ordinarily."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "reversible_deep_mlp.py"
MISSING_DATA = 2


def test_smoke_run_learns_in_a_fraction_of_the_memory(tmp_path: Path) -> None:
    pytest.importorskip("pullback.avyaya", reason="the example needs pullback-avyaya")
    result = subprocess.run([sys.executable, str(EXAMPLE), "--smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == MISSING_DATA:
        pytest.skip(f"Fashion-MNIST is not here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["blocks"] == 20 and summary["steps"] == 30
    assert summary["test_accuracy"] > 0.5, summary  # chance is 10 %
    assert summary["activation_mib_reversible"] * 5 < summary["activation_mib_ordinary"], summary
    assert (tmp_path / "metrics.csv").is_file() and (tmp_path / "curves.png").is_file()
