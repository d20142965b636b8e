"""``Module.share_memory()`` and modules passed to other processes: hogwild_program.py trains
the parent's model from worker processes (fork and spawn, shared or not) under torch and
under pullback, and the parent's model must end the same."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import pullback
from pullback import nn

PROGRAM = Path(__file__).with_name("hogwild_program.py")
CASES = ["fork-shared", "fork-plain", "spawn-shared", "spawn-plain"]


def _run(framework: str) -> dict:
    result = subprocess.run([sys.executable, str(PROGRAM), framework], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    pytest.importorskip("torch", reason="torch.multiprocessing is the oracle")
    return {framework: _run(framework) for framework in ("torch", "pullback")}


@pytest.mark.parametrize("case", CASES)
def test_the_parents_model_ends_as_under_torch(runs: dict[str, dict], case: str) -> None:
    assert runs["pullback"][case] == runs["torch"][case]


def test_workers_trained_the_shared_model(runs: dict[str, dict]) -> None:
    ours = runs["pullback"]
    assert ours["fork-shared"]["weight"] == [-0.15, -0.15, 0.0, 0.0]
    assert ours["fork-shared"]["steps"] == [3.0, 3.0]
    assert ours["fork-plain"]["weight"] == [0.0] * 4  # copy-on-write: nothing comes back


def test_share_memory_shares_parameters_buffers_and_gradients() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    model(pullback.randn(4, 2)).sum().backward()
    assert model.share_memory() is model
    tensors = [*model.parameters(), *model.buffers(), *(p.grad for p in model.parameters())]
    assert all(t.is_shared() for t in tensors)


def test_a_module_is_not_pickled_outside_a_process_start() -> None:
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(nn.Linear(2, 2))
