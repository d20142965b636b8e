"""examples/per_sample_gradients.py --smoke: per-sample gradients equal a loop of backward
passes, and the forward-over-reverse Hessian-vector product equals reverse over reverse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "per_sample_gradients.py"
MISSING_DATA = 2


def test_smoke_run(tmp_path: Path) -> None:
    pytest.importorskip("pullback.func", reason="the example needs pullback-vmap-dp")
    result = subprocess.run([sys.executable, str(EXAMPLE), "--smoke", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode == MISSING_DATA:
        pytest.skip(f"Fashion-MNIST is not here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["batch"] == 32
    assert summary["max_abs_diff_vs_loop"] < 1e-4, summary
    assert summary["hvp_max_abs_diff_vs_reverse_over_reverse"] < 1e-4 * max(
        1.0, summary["hvp_max_abs"]), summary
    assert 0.0 <= summary["clipped_fraction"] <= 1.0
    rows = (tmp_path / "per_sample_norms.csv").read_text().splitlines()
    assert len(rows) == 33 and (tmp_path / "norms.png").is_file()
