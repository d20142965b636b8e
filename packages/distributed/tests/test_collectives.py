"""Every collective at world size 2 and 4 against the single-process answer (each rank checks
its own results inside the scenario)."""

from __future__ import annotations

import pytest
from distributed_support import rank_results


@pytest.mark.parametrize("n", [2, 4])
def test_collectives_match_the_single_process_answer(launch, n):
    rank_results(launch(n, "collectives"), n)


@pytest.mark.cuda
def test_nccl_collectives_on_gpus(launch):
    import pullback

    gpus = pullback.backends.get_backend("cuda").device_count()
    n = min(gpus, 2)  # NCCL needs one GPU per rank
    rank_results(launch(n, "nccl_collectives"), n)
