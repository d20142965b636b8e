"""The examples run end to end. The main job (the Fashion-MNIST MLP of ``nox -s demo``) trains
for a short while here and must be far above chance (10 %) on the 10,000 test images."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")


def test_the_fashion_mnist_mlp_learns(tmp_path: Path) -> None:
    for module, why in [("pullback.nn", "pullback-nn"), ("pullback.optim", "pullback-optim"),
                        ("tqdm", "tqdm"), ("matplotlib", "matplotlib")]:
        pytest.importorskip(module, reason=f"the example needs {why}")
    if not list(FASHION_MNIST.glob("t10k-images-idx3-ubyte*")):
        pytest.skip(f"Fashion-MNIST is not in {FASHION_MNIST} (apt-get install dataset-fashion-mnist)")
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "fashion_mnist_mlp.py"), "--epochs", "1",
         "--steps-per-epoch", "150", "--out", str(tmp_path)], capture_output=True, text=True,
        timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["steps"] == 150
    assert summary["test_accuracy"] > 0.7, summary
    assert (tmp_path / "metrics.csv").is_file() and (tmp_path / "curves.png").is_file()
