"""pullback.distributed: data-parallel training across processes and machines.

torch.distributed's shape on existing engines: MPI through mpi4py for CPU tensors, NCCL
through CuPy for GPU tensors. Launch K processes with ``mpiexec -n K python train.py`` (or
Slurm's ``srun``); each calls :func:`init_process_group`, wraps its model in
:class:`DistributedDataParallel` and reads its shard of the data through
:class:`DistributedSampler`.

Example (``mpiexec -n 2 python train.py``)::

    import pullback
    from pullback import distributed as dist, nn, optim

    dist.init_process_group("mpi")
    model = dist.DistributedDataParallel(nn.Linear(4, 1))
    opt = optim.SGD(model.parameters(), lr=0.1)
    x = pullback.randn(8, 4)
    loss = model(x).pow(2).mean()
    loss.backward()          # gradients averaged over the ranks
    opt.step()
"""

from .__about__ import __version__
from ._checkpoint import save_checkpoint
from ._collectives import (
    ReduceOp, Work, all_gather, barrier, broadcast, recv, reduce_scatter, send,
)
from ._ddp import DistributedDataParallel
from ._fastpath import all_reduce
from ._group import (
    ProcessGroup, destroy_process_group, get_backend, get_rank, get_world_size,
    init_process_group, is_initialized, launched_world_size, new_group,
)
from ._sampler import DistributedSampler
from .errors import DistributedError, DistributedTimeoutError

__all__ = [
    "DistributedDataParallel", "DistributedError", "DistributedSampler",
    "DistributedTimeoutError", "ProcessGroup", "ReduceOp", "Work", "__version__", "all_gather",
    "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend", "get_rank",
    "get_world_size", "init_process_group", "is_initialized", "launched_world_size",
    "new_group", "recv", "reduce_scatter", "save_checkpoint", "send",
]
