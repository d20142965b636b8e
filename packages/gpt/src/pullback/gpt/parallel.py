"""Data-parallel training of the GPT when ``pullback-gpt train`` is started by a launcher
(``mpiexec -n K pullback-gpt train ...``, Slurm's ``srun``), through pullback-distributed.

Every rank holds the model; the configured batch is the global one, split evenly across the
ranks, and DistributedDataParallel averages the gradients, so the run follows the same
trajectory as one process up to the data each rank samples. Rank 0 alone evaluates, logs, plots
and writes checkpoints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

# The variables by which MPI launchers and Slurm tell a process its rank and world size (read
# before importing pullback-distributed, which a single-process run does not need).
_LAUNCHER_VARIABLES = (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                       ("PMIX_RANK", "PMIX_SIZE"), ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
                       ("SLURM_PROCID", "SLURM_NTASKS"))


class DataParallelError(RuntimeError):
    """A launched run cannot be data-parallel (pullback-distributed missing, a batch that the
    ranks cannot share)."""


def _launched() -> tuple[int, int]:
    """(rank, size) as the launcher set them; (0, 1) without one."""
    for rank_var, size_var in _LAUNCHER_VARIABLES:
        rank, size = os.environ.get(rank_var, ""), os.environ.get(size_var, "")
        if rank.isdigit() and size.isdigit():
            return int(rank), int(size)
    return 0, 1


def launched_rank() -> int:
    """This process's rank as the launcher set it (0 without one), before any MPI call."""
    return _launched()[0]


@dataclass
class DataParallel:
    """This process's place in a data-parallel run."""

    rank: int
    size: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def local_batch(self, batch_size: int) -> int:
        if batch_size % self.size:
            raise DataParallelError(f"--batch-size {batch_size} cannot be split evenly over "
                                    f"{self.size} processes; use a multiple of {self.size}")
        return batch_size // self.size

    def wrap(self, model: Any) -> Any:
        from pullback import distributed as dist

        return dist.DistributedDataParallel(model)

    def mean(self, value: float) -> float:
        """The average of a number over the ranks (a logged loss of the global batch)."""
        import pullback
        from pullback import distributed as dist

        t = pullback.tensor([value], dtype=pullback.float64)
        dist.all_reduce(t, op="avg")
        return t.item()

    def gather(self, value: Any) -> list[Any]:
        """A small JSON value from every rank (their random states), in rank order."""
        from pullback.distributed._group import world

        return world("gather").all_gather_object(value)

    def barrier(self) -> None:
        from pullback import distributed as dist

        dist.barrier()


def data_parallel() -> DataParallel | None:
    """The data-parallel context when a launcher started several processes, else None."""
    size = _launched()[1]
    if size <= 1:
        return None
    try:
        from pullback import distributed as dist
    except ImportError:
        raise DataParallelError(f"started on {size} processes, but pullback-distributed is not "
                                "installed: pip install pullback-distributed (from a clone: "
                                "pip install -e packages/distributed[mpich])") from None
    if not dist.is_initialized():
        dist.init_process_group("mpi")
    return DataParallel(dist.get_rank(), dist.get_world_size())
