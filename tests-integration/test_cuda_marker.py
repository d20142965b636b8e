"""Tests marked ``cuda`` run where a CUDA device is usable and are skipped, with the reason,
everywhere else (the hook in the repository's root conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pullback

ROOT = Path(__file__).resolve().parents[1]


def test_a_cuda_test_is_skipped_with_a_reason_or_runs_on_a_device(tmp_path: Path) -> None:
    (tmp_path / "test_gpu.py").write_text(
        "import pytest\n\n@pytest.mark.cuda\ndef test_on_gpu():\n    assert True\n\n"
        "def test_on_cpu():\n    assert True\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The root conftest.py, loaded as a plugin by its module name, outside the repository.
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-rs",
         str(tmp_path)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    summary = result.stdout.strip().splitlines()[-1]
    if pullback.is_available("cuda"):
        assert "2 passed" in summary, result.stdout
    else:
        assert result.returncode == 0 and "1 passed, 1 skipped" in summary, result.stdout
        assert "SKIPPED [1] test_gpu.py:3: needs a CUDA device: " in result.stdout
