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
    as MPI's blocking call under one watchdog thread per group, with the same results; so do
    both modes of the lean path in Python (no native build: PULLBACK_NATIVE=0)."""
    runs = {}
    for mode in ("raise", "abort"):
        for compiled in (True, False):
            env = {"PULLBACK_DISTRIBUTED_ON_TIMEOUT": mode, **({} if compiled else
                                                               {"PULLBACK_NATIVE": "0"})}
            reports = rank_results(launch(2, "collectives", mode, env=env), 2)
            runs[mode, compiled] = sorted(reports, key=lambda r: r["rank"])
    for rank in range(2):
        # Two ranks: every algorithm adds the same two operands, so the bits must agree.
        assert len({runs[key][rank]["digest"] for key in runs}) == 1, runs
        for compiled in (True, False):
            ours, theirs = runs["abort", compiled][rank], runs["raise", compiled][rank]
            assert ours["compiled"] == theirs["compiled"] == compiled, (ours, theirs)
            assert theirs["Allreduce"] == 0 and theirs["watchdogs"] == []
            # One thread for the world and one for the sub-group of ranks 0 and 1.
            assert len(ours["watchdogs"]) == 2, ours
            if compiled:
                # The lean calls went to C in both modes (mpi4py saw only the general path's),
                # as many in each; C refused the same ones (views, widened dtypes).
                assert ours["native"] == theirs["native"] > 0, (ours, theirs)
                assert ours["native_refused"] == theirs["native_refused"] > 0
                assert ours["Allreduce"] == 0 and ours["Iallreduce"] == theirs["Iallreduce"]
            else:
                # In Python they were blocking in abort mode, non-blocking in raise mode.
                assert ours["native"] == theirs["native"] == 0
                blocking = ours["Allreduce"]
                assert blocking > 0, ours
                assert ours["Iallreduce"] == theirs["Iallreduce"] - blocking


def test_the_compiled_lean_path_equals_mpi4py_and_refuses_what_it_does_not_cover(launch):
    """Every dtype and op the C path covers, in both timeout modes, bit-equal to mpi4py's
    Allreduce; strided, float16 and bool tensors go down the general path; bad arguments to
    the builtin are refused, never a crash (checks inside the scenario)."""
    rank_results(launch(2, "lean_native_edges"), 2)


@pytest.mark.cuda
def test_nccl_collectives_on_gpus(launch):
    import pullback

    gpus = pullback.backends.get_backend("cuda").device_count()
    n = min(gpus, 2)  # NCCL needs one GPU per rank
    rank_results(launch(n, "nccl_collectives"), n)
