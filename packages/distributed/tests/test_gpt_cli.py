"""``mpiexec -n 2 pullback-gpt train``: the CLI detects the launch and trains data-parallel;
rank 0 alone prints, logs and writes checkpoints, which one process can then evaluate."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
from distributed_support import mpiexec

pytest.importorskip("pullback.gpt", reason="needs pullback-gpt")

CORPUS = ("Now is the winter of our discontent made glorious summer by this sun of York; "
          "and all the clouds that lour'd upon our house in the deep bosom of the ocean buried.\n")


def test_the_gpt_cli_trains_data_parallel(tmp_path):
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec: pip install mpich")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 40)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OPENBLAS_NUM_THREADS": "1"}
    result = subprocess.run(
        [exe, "-n", "2", sys.executable, "-m", "pullback.gpt", "train", "--data", str(corpus),
         "--config", "nano-cpu", "--steps", "6", "--batch-size", "4", "--warmup", "1",
         "--eval-interval", "3", "--eval-iters", "2", "--checkpoint-interval", "3",
         "--out", str(out), "--quiet"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("finished at step 6") == 1, result.stdout  # rank 0 only
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows if r["loss"]] == list(range(1, 7))
    latest = (out / "checkpoints" / "LATEST").read_text().strip()
    state = json.loads((out / "checkpoints" / latest / "state.json").read_text())
    assert state["step"] == 6 and len(state["data_rng_ranks"]) == 2
    evaluated = subprocess.run([sys.executable, "-m", "pullback.gpt", "eval", "--checkpoint",
                                str(out), "--data", str(corpus)], capture_output=True, text=True,
                               timeout=300, env=env)
    assert evaluated.returncode == 0, evaluated.stderr
    assert "val loss" in evaluated.stdout


def test_a_batch_the_ranks_cannot_share_is_a_usage_error(tmp_path):
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec: pip install mpich")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 40)
    result = subprocess.run(
        [exe, "-n", "2", sys.executable, "-m", "pullback.gpt", "train", "--data", str(corpus),
         "--steps", "2", "--batch-size", "5", "--warmup", "1", "--out", str(tmp_path / "r"),
         "--quiet"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert result.returncode == 2, result.stderr
    assert "cannot be split evenly over 2 processes" in result.stderr
    assert "Traceback" not in result.stderr
