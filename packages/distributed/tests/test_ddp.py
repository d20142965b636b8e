"""DistributedDataParallel: N steps on 2 and 4 processes give the parameters of one process on
the concatenated batch (float64, to 1e-12), for one bucket and many, SGD with momentum and
AdamW, gradient accumulation with no_sync(), and unused parameters."""

from __future__ import annotations

import pytest
from distributed_support import rank_results


@pytest.mark.parametrize("n, optimizer, bucket_mb", [
    (2, "sgd", "25"), (2, "adamw", "0.0005"), (4, "sgd", "0.0005"), (4, "adamw", "25"),
], ids=["2-sgd-one-bucket", "2-adamw-many-buckets", "4-sgd-many-buckets", "4-adamw-one-bucket"])
def test_ddp_equals_one_process_on_the_whole_batch(launch, n, optimizer, bucket_mb):
    rank_results(launch(n, "ddp", optimizer, bucket_mb), n)


def test_no_sync_accumulation_equals_one_process(launch):
    rank_results(launch(2, "ddp", "sgd", "0.0005", "3", "3"), 2)


def test_find_unused_parameters(launch):
    rank_results(launch(2, "ddp", "sgd", "25", "3", "1", "1"), 2)


def test_an_unused_parameter_is_a_clear_error_without_find_unused(launch):
    rank_results(launch(2, "unused_error"), 2)
