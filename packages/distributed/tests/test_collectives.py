"""Every collective at world size 2 and 4 against the single-process answer (each rank checks
its own results inside the scenario)."""

from __future__ import annotations

import pytest
from distributed_support import rank_results


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_match_the_single_process_answer(launch, n):
    rank_results(launch(n, "collectives"), n)


def test_abort_mode_reduces_as_raise_mode_does(launch):
    """on_timeout="abort", chosen by the environment variable, runs the lean path's all-reduces
    as MPI's blocking call under one watchdog thread per group, with the same results."""
    raised = rank_results(launch(2, "collectives", "raise"), 2)
    aborting = rank_results(launch(2, "collectives", "abort",
                                   env={"PULLBACK_DISTRIBUTED_ON_TIMEOUT": "abort"}), 2)
    for ours, theirs in zip(sorted(aborting, key=lambda r: r["rank"]),
                            sorted(raised, key=lambda r: r["rank"])):
        # Two ranks: every algorithm adds the same two operands, so the bits must agree.
        assert ours["digest"] == theirs["digest"], (ours, theirs)
        assert theirs["Allreduce"] == 0 and theirs["watchdogs"] == []
        # The lean path's calls were blocking in abort mode, non-blocking in raise mode.
        blocking = ours["Allreduce"]
        assert blocking > 0, ours
        assert ours["Iallreduce"] == theirs["Iallreduce"] - blocking
        # One thread for the world and one for the sub-group of ranks 0 and 1, not one per call.
        assert len(ours["watchdogs"]) == 2, ours


@pytest.mark.cuda
def test_nccl_collectives_on_gpus(launch):
    import pullback

    gpus = pullback.backends.get_backend("cuda").device_count()
    n = min(gpus, 2)  # NCCL needs one GPU per rank
    rank_results(launch(n, "nccl_collectives"), n)
