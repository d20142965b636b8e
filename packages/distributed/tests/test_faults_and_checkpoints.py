"""A rank that dies makes the others fail within the timeout, naming it; checkpoints are written
by rank 0 and resume on another world size; the sampler shards as torch's does."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
from distributed_support import rank_results


@pytest.mark.parametrize("path", ["lean", "general"])
def test_a_dead_rank_is_named_within_the_timeout(launch, path):
    result = launch(2, "dead_rank", "3", path, flags=("-disable-auto-cleanup",), timeout=120,
                    survive_launcher=True)
    reports = [json.loads(m) for m in re.findall(r"\{[^{}]*\}", result.stdout)]
    survivor = next(r for r in reports if "error" in r)
    # A synchronous all_reduce of a contiguous float32 tensor takes the lean path, and its own
    # wait raises the timeout; async work waits on the general path.
    assert ("_fastpath.py" in survivor["raised_in"].split()) == (path == "lean"), survivor
    # The survivor reports only from its `except DistributedTimeoutError` (mpi_scenarios): the
    # error's type is checked there. Its traceback on stderr can lose its last line when the job
    # is aborted at exit, so the message is read from the report instead.
    assert "rank 1 has died" in survivor["error"], survivor
    assert "all_reduce" in survivor["error"] and "within 3 s" in survivor["error"], survivor
    assert 3.0 <= survivor["seconds"] < 20.0, survivor


@pytest.mark.parametrize("path, thread_level, compiled", [
    ("lean", "multiple", True), ("lean", "serialized", True), ("lean", "multiple", False),
    ("general", "multiple", True)])
def test_abort_mode_ends_the_job_naming_the_dead_rank(launch, path, thread_level, compiled):
    timeout = 3.0
    result = launch(2, "dead_rank", str(timeout), path, "abort", thread_level,
                    flags=("-disable-auto-cleanup",), timeout=120, survive_launcher=True,
                    env=None if compiled else {"PULLBACK_NATIVE": "0"})
    ended = time.monotonic()  # CLOCK_MONOTONIC: the same clock as the ranks'
    reports = [json.loads(m) for m in re.findall(r"\{[^{}]*\}", result.stdout)]
    survivor = next(r for r in reports if "waiting_since" in r)
    running = [r for r in reports if "running_seconds" in r]
    if path == "lean" and compiled:
        # Half-way to the timeout the compiled call was blocked in MPI_Allreduce, announced to
        # the watchdog (what it fires on), op included.
        assert len(running) == 1 and running[0]["running_op"] == "sum", reports
        assert 0.5 * timeout - 0.5 < running[0]["running_seconds"] < timeout, running
    else:
        assert running == [], reports
    assert survivor["thread_level"] == thread_level, survivor
    assert not any("returned" in r or "error" in r for r in reports), reports
    assert result.returncode != 0, result
    line = ("DistributedTimeoutError: all_reduce(op='sum') did not complete within 3 s on rank "
            "0: rank 1 has died; ending the job (on_timeout='abort')")
    assert line in result.stderr.splitlines(), result.stderr[-3000:]
    # The watchdog wakes every 0.3 s here; the rest is MPI's and the launcher's teardown.
    assert timeout <= ended - survivor["waiting_since"] < timeout + 10, (survivor, ended)


@pytest.mark.parametrize("resume_on", [1, 4])
def test_a_checkpoint_resumes_on_another_world_size(launch, tmp_path, resume_on):
    path = str(tmp_path / "ckpt.safetensors")
    rank_results(launch(2, "checkpoint", "first", path, "3"), 2)
    rank_results(launch(resume_on, "checkpoint", "resume", path, "2"), resume_on)
    reference = str(tmp_path / "reference.safetensors")
    rank_results(launch(1, "checkpoint", "first", reference, "5"), 1)
    import pullback

    ours, ref = pullback.load(path), pullback.load(reference)
    assert ours["step"] == ref["step"] == 5
    for name, value in ref["model"].items():
        np.testing.assert_allclose(ours["model"][name].numpy(), value.numpy(), rtol=1e-12,
                                   atol=1e-14, err_msg=name)
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert not leftovers, leftovers


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (8, 4, False),
                                                     (5, 8, False)])
def test_sampler_shards_like_torch(n, replicas, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    from pullback.distributed import DistributedSampler

    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    del torch


def test_shuffled_shards_are_disjoint_and_change_with_the_epoch():
    from pullback.distributed import DistributedSampler

    shards = [DistributedSampler(range(20), 4, r, seed=3) for r in range(4)]
    first = [list(s) for s in shards]
    assert sorted(i for s in first for i in s) == list(range(20))
    for s in shards:
        s.set_epoch(1)
    assert [list(s) for s in shards] != first


def test_errors_before_init_and_for_bad_arguments():
    from pullback import distributed as dist

    with pytest.raises(dist.DistributedError, match="init_process_group"):
        dist.get_rank()
    with pytest.raises(ValueError, match="backend"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match=r"on_timeout must be one of \('raise', 'abort'\), got 'exit'"):
        dist.init_process_group(on_timeout="exit")


def test_a_bad_timeout_mode_in_the_environment_is_an_error_naming_the_variable(monkeypatch):
    from pullback import distributed as dist

    monkeypatch.setenv("PULLBACK_DISTRIBUTED_ON_TIMEOUT", "Abort")
    with pytest.raises(ValueError, match="PULLBACK_DISTRIBUTED_ON_TIMEOUT must be one of .*'Abort'"):
        dist.init_process_group()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="rank 5"):
        dist.DistributedSampler(range(4), num_replicas=2, rank=5)
