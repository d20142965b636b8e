"""pullback.multiprocessing against torch.multiprocessing: the same program (mp_program.py)
sends tensors to processes started by fork and by spawn, through arguments, a Queue and
``spawn``, under both frameworks, and the parent must see the same numbers; plus
``share_memory_``/``is_shared`` in one process."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback
import pullback.multiprocessing as mp

PROGRAM = Path(__file__).with_name("mp_program.py")


SCENARIOS = ["args-shared-fork", "args-plain-fork", "args-plain-spawn", "queue-spawn",
             "queue-fork", "spawn-spawn", "nonleaf-spawn"]  # mp_program.py's, described there


def _run(framework: str) -> dict:
    result = subprocess.run([sys.executable, str(PROGRAM), framework], capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    pytest.importorskip("torch", reason="torch.multiprocessing is the oracle")
    return {framework: _run(framework) for framework in ("torch", "pullback")}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_parent_sees_what_it_sees_under_torch(runs: dict[str, dict], scenario: str) -> None:
    assert runs["pullback"][scenario] == runs["torch"][scenario]


def test_the_scenarios_ran_and_did_something(runs: dict[str, dict]) -> None:
    ours = runs["pullback"]
    assert list(ours) == SCENARIOS
    assert ours["args-shared-fork"]["t"] == [1.0, 2.0] and ours["args-plain-fork"]["t"] == [0, 0]
    assert ours["queue-spawn"]["t"] == [6.0] * 3 and ours["queue-spawn"]["back_shared"]
    assert ours["spawn-spawn"]["raised"]["type"] == "ProcessRaisedException"


def test_share_memory_keeps_values_and_is_idempotent() -> None:
    t = pullback.arange(12.0).reshape(3, 4).t()  # non-contiguous
    assert not t.is_shared()
    assert t.share_memory_() is t and t.is_shared()
    np.testing.assert_array_equal(t.numpy(), np.arange(12.0).reshape(3, 4).T)
    array = t.array
    t.share_memory_()
    assert t.array is array  # already shared: nothing moves
    assert t[1:].is_shared()  # a view of shared memory is shared, as in PyTorch
    assert not (t * 2).is_shared()


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int64", "bool", "uint8"])
def test_every_dtype_and_empty_tensors_can_be_shared(dtype: str) -> None:
    t = pullback.tensor(np.arange(6) % 2, dtype=dtype).share_memory_()
    assert t.dtype == pullback.dtypes.to_dtype(dtype) and t.is_shared()
    assert pullback.zeros(0, 3).share_memory_().shape == (0, 3)


def test_share_memory_matches_torch_on_flags() -> None:
    torch = pytest.importorskip("torch")
    for lib in (torch, pullback):
        t = lib.ones(2, requires_grad=True)
        assert t.share_memory_() is t and t.is_shared() and t.requires_grad


def test_plain_pickle_is_still_refused() -> None:
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(pullback.ones(2))


def test_the_namespace_is_pythons_multiprocessing_plus_pytorchs_names() -> None:
    assert mp.Process is multiprocessing.Process and mp.Queue == multiprocessing.Queue
    assert set(multiprocessing.__all__) <= set(mp.__all__)
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(NotImplementedError, match="file_system"):
        mp.set_sharing_strategy("file_system")
