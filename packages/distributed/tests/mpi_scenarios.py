"""Scenarios run under ``mpiexec -n K python mpi_scenarios.py NAME``: each rank checks its own
results against the single-process answer (computed with NumPy, or by one process on the
concatenated batch) and exits non-zero with a message if they differ. Not collected by pytest
(the tests in test_*.py launch it)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback

import numpy as np

import pullback
from pullback import distributed as dist
from pullback import nn, optim

DTYPES = ["float32", "float64", "int64", "float16", "bfloat16"]


class _RecordingComm:
    """The world's communicator, counting its blocking and non-blocking all-reduce calls."""

    def __init__(self, comm) -> None:
        self.comm, self.calls = comm, {"Allreduce": 0, "Iallreduce": 0}

    def __getattr__(self, name):  # every other call, unchanged
        return getattr(self.comm, name)

    def Allreduce(self, *args, **kwargs):
        self.calls["Allreduce"] += 1
        return self.comm.Allreduce(*args, **kwargs)

    def Iallreduce(self, *args, **kwargs):
        self.calls["Iallreduce"] += 1
        return self.comm.Iallreduce(*args, **kwargs)


def _record_compiled(group, calls: dict[str, int]) -> bool:
    """Count the compiled lean path's answers on ``group`` in ``calls`` ("native": reduced,
    "native_refused": sent down the general path); whether the group has that path."""
    lean = group.lean_native
    calls.update(native=0, native_refused=0)
    if lean is None:
        return False

    def reduce(array, index):
        done = lean.reduce(array, index)
        calls["native" if done is not False else "native_refused"] += 1
        return done

    group.lean_native = lean._replace(reduce=reduce)
    return True


def collectives(expected_mode: str = "raise") -> None:
    """Every collective against NumPy's answer. The timeout mode comes from the environment
    (PULLBACK_DISTRIBUTED_ON_TIMEOUT) and must be ``expected_mode``; the report carries a digest
    of every all_reduce result (equal between the modes) and what the lean path called."""
    world = dist.init_process_group("mpi", timeout=60)
    assert world.on_timeout == expected_mode, (world.on_timeout, expected_mode)
    recorder = _RecordingComm(world.lean_mpi.comm)
    world.lean_mpi.comm = recorder
    compiled = _record_compiled(world, recorder.calls)
    digest = hashlib.sha256()
    rank, size = dist.get_rank(), dist.get_world_size()
    rng = lambda r: np.random.default_rng(100 + r)  # noqa: E731 - every rank's data, everywhere
    for dtype in DTYPES:
        dt = pullback.dtypes.to_dtype(dtype)
        mine = [(rng(r).normal(size=(3, 5)) * 4).astype(dt) for r in range(size)]
        for op, ref in [("sum", np.sum), ("max", np.max), ("min", np.min), ("avg", np.mean),
                        ("product", np.prod)]:
            if dtype == "int64" and op == "avg":
                continue
            t = pullback.tensor(mine[rank].copy())
            dist.all_reduce(t, op=op)
            digest.update(t.numpy().tobytes())
            expected = ref(np.stack([m.astype(np.float64) for m in mine]), axis=0)
            tol = {"float16": 2e-2, "bfloat16": 5e-2}.get(dtype, 1e-6)
            np.testing.assert_allclose(t.numpy().astype(np.float64), expected, rtol=tol,
                                       atol=tol, err_msg=f"all_reduce {op} {dtype}")
            assert t.dtype == dt
    for src in range(size):
        t = pullback.tensor(np.full(4, float(rank)))
        dist.broadcast(t, src=src)
        np.testing.assert_array_equal(t.numpy(), np.full(4, float(src)))
    out = [pullback.zeros(2, 3) for _ in range(size)]
    dist.all_gather(out, pullback.full((2, 3), float(rank)))
    for r in range(size):
        np.testing.assert_array_equal(out[r].numpy(), np.full((2, 3), float(r)))
    inputs = [pullback.tensor(np.full(3, float(rank * 10 + k))) for k in range(size)]
    got = pullback.zeros(3, dtype=pullback.float64)
    dist.reduce_scatter(got, inputs, op="sum")
    np.testing.assert_array_equal(got.numpy(), np.full(3, float(sum(r * 10 + rank for r in range(size)))))
    # send/recv around a ring
    right, left = (rank + 1) % size, (rank - 1) % size
    box = pullback.zeros(2)
    if rank % 2 == 0:
        dist.send(pullback.tensor([float(rank), 1.0]), right)
        dist.recv(box, left)
    else:
        dist.recv(box, left)
        dist.send(pullback.tensor([float(rank), 1.0]), right)
    np.testing.assert_array_equal(box.numpy(), [float(left), 1.0])
    # non-contiguous tensors, async work
    base = pullback.tensor(np.arange(12.0).reshape(3, 4) + rank)
    view = base.T
    work = dist.all_reduce(view, op="sum", async_op=True)
    work.wait()
    assert work.is_completed()
    np.testing.assert_array_equal(base.numpy(), size * np.arange(12.0).reshape(3, 4) + sum(range(size)))
    # synchronously, just after a contiguous float64 tensor went through the lean path: the
    # view must still be sent down the general path (copied, reduced, copied back)
    dense = pullback.tensor(np.ones(4))
    dist.all_reduce(dense)
    base = pullback.tensor(np.arange(12.0).reshape(3, 4) + rank)
    dist.all_reduce(base.T)
    np.testing.assert_array_equal(base.numpy(), size * np.arange(12.0).reshape(3, 4) + sum(range(size)))
    np.testing.assert_array_equal(dense.numpy(), np.full(4, float(size)))
    # a sub-group of the first two ranks
    sub = dist.new_group([0, 1])
    t = pullback.tensor([1.0])
    if rank in (0, 1):
        dist.all_reduce(t, group=sub)
        assert t.item() == 2.0 and dist.get_world_size(sub) == 2 and dist.get_rank(sub) == rank
    else:
        try:
            dist.all_reduce(t, group=sub)
        except dist.DistributedError as exc:
            assert f"rank {rank} is not a member" in str(exc)
        else:
            raise AssertionError("a non-member's collective must fail")
    dist.barrier()
    watchdogs = [t.name for t in threading.enumerate()
                 if t.name.startswith("pullback-distributed-watchdog")]
    print(json.dumps({"rank": rank, "ok": True, "digest": digest.hexdigest(), "compiled": compiled,
                      **recorder.calls, "watchdogs": watchdogs}), flush=True)


def lean_native_edges() -> None:
    """The compiled lean all-reduce (both timeout modes) against mpi4py's Allreduce on a copy
    of the same data, bit for bit, on every dtype and op it covers; what it does not cover goes
    down the general path with the right answer; and no argument crashes it."""
    from mpi4py import MPI

    from pullback.distributed import _native

    world = dist.init_process_group("mpi", timeout=60)
    aborting = dist.new_group(on_timeout="abort")
    rank, size = dist.get_rank(), dist.get_world_size()
    reference = MPI.COMM_WORLD.Dup()
    mpi_ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "product": MPI.PROD}
    for group in (world, aborting):
        calls: dict[str, int] = {}
        assert _record_compiled(group, calls), "the compiled lean path did not build"
        covered = 0
        for code in _native.FORMATS:
            dtype = np.dtype(code)
            for shape in [(3, 5), (), (0,), (257,)]:
                data = np.random.default_rng(7 + rank).integers(-3, 4, size=shape).astype(dtype)
                for op, mpi_op in mpi_ops.items():
                    t = pullback.tensor(data.copy())
                    version = t._version[0]
                    dist.all_reduce(t, op=op, group=group)
                    expected = data.copy()
                    reference.Allreduce(MPI.IN_PLACE, expected, op=mpi_op)
                    assert t.array.dtype == dtype and t.array.tobytes() == expected.tobytes(), (
                        code, shape, op, t.array, expected)
                    assert t._version[0] == version + 1
                    covered += 1
        t = pullback.tensor(np.arange(6.0))  # avg: a sum divided by the size
        dist.all_reduce(t, op="avg", group=group)
        np.testing.assert_array_equal(t.numpy(), np.arange(6.0))
        assert calls == {"native": covered + 1, "native_refused": 0}, calls
        # Not covered: strided, float16 and bool (widened): refused by C, reduced by the general
        # path. (Another byte order is refused too, below; mpi4py's general path refuses it.)
        strided = pullback.tensor(np.arange(12.0).reshape(3, 4) + rank)
        dist.all_reduce(strided.T, group=group)
        np.testing.assert_array_equal(strided.numpy(), size * np.arange(12.0).reshape(3, 4)
                                      + sum(range(size)))
        for data in (np.arange(4, dtype=np.float16),
                     np.array([True, False, rank == 0, False])):
            t = pullback.Tensor._wrap(data.copy())
            dist.all_reduce(t, op="max", group=group)
            np.testing.assert_array_equal(t.numpy(), data if data.dtype != bool
                                          else [True, False, True, False])
        assert calls["native_refused"] == 3 and calls["native"] == covered + 1, calls
    # Nothing crashes the builtin: a bad array or op index is refused (False), a call of the
    # wrong shape is a TypeError.
    lean = _native.lean_allreduce(reference, world.lean_mpi.ops, True, 60.0)
    read_only = np.ones(3)
    read_only.flags.writeable = False
    for bad in (None, [1.0, 2.0], b"bytes", "text", read_only, np.ones(6)[::2],
                np.ones(3, np.complex128), np.zeros(2, dtype=[("a", "f4"), ("b", "i4")]),
                np.ones(3, ">f8"), np.ones(3, np.float16), np.ones(3, bool), np.ones(3, "V4")):
        assert lean.reduce(bad, 0) is False, bad
    for index in (-1, len(lean.names), 2**40):
        assert lean.reduce(np.ones(3), index) is False, index
    for args in ((), (np.ones(3),), (np.ones(3), 0, 0), (np.ones(3), "sum")):
        try:
            lean.reduce(*args)
        except (TypeError, OverflowError):
            pass
        else:
            raise AssertionError(f"reduce{args} must be a TypeError")
    print(json.dumps({"rank": rank, "ok": True}), flush=True)


class _WithUnusedBranch(nn.Module):
    def __init__(self, body: nn.Module) -> None:
        super().__init__()
        self.body = body
        self.extra = nn.Linear(3, 3, dtype=pullback.float64)  # never called

    def forward(self, x):
        return self.body(x)


def _model(seed: int = 0, unused: bool = False) -> nn.Module:
    pullback.manual_seed(seed)
    f64 = pullback.float64
    body = nn.Sequential(nn.Linear(6, 16, dtype=f64), nn.Tanh(), nn.Linear(16, 16, dtype=f64),
                         nn.Tanh(), nn.Linear(16, 3, dtype=f64))
    return _WithUnusedBranch(body) if unused else body


def _batches(steps: int, global_batch: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(global_batch, 6)), rng.normal(size=(global_batch, 3)))
            for _ in range(steps)]


def _loss(model, x, y):
    return ((model(pullback.tensor(x)) - pullback.tensor(y)) ** 2).mean()


def _reference(steps, global_batch, optimizer, unused=False, micro=1):
    """One process on the concatenated batches: the answer DDP must give."""
    model = _model(unused=unused)
    params = [p for n, p in model.named_parameters() if not n.startswith("extra")]
    opt = optimizer(params)
    batches = _batches(steps * micro, global_batch)
    for s in range(steps):
        opt.zero_grad()
        for m in range(micro):
            x, y = batches[s * micro + m]
            _loss(model, x, y).backward()
        opt.step()
    return {n: p.detach().numpy() for n, p in model.named_parameters()}


OPTIMIZERS = {"sgd": lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
              "adamw": lambda ps: optim.AdamW(ps, lr=0.01)}


def ddp(optimizer: str, bucket_mb: str, steps: str = "5", micro: str = "1",
        unused: str = "0") -> None:
    dist.init_process_group("mpi", timeout=60)
    rank, size = dist.get_rank(), dist.get_world_size()
    steps_n, micro_n, global_batch = int(steps), int(micro), 8
    # Every rank starts from other weights: DDP must broadcast rank 0's.
    model = dist.DistributedDataParallel(_model(seed=rank, unused=unused == "1"),
                                         bucket_cap_mb=float(bucket_mb),
                                         find_unused_parameters=unused == "1")
    if float(bucket_mb) < 0.001:
        assert len(model._buckets) > 3, len(model._buckets)
    opt = OPTIMIZERS[optimizer]([p for n, p in model.module.named_parameters()
                                 if not n.startswith("extra")])
    share = global_batch // size
    batches = _batches(steps_n * micro_n, global_batch)
    for s in range(steps_n):
        opt.zero_grad()
        for m in range(micro_n):
            x, y = batches[s * micro_n + m]
            x, y = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
            if m < micro_n - 1:
                with model.no_sync():
                    _loss(model, x, y).backward()
            else:
                _loss(model, x, y).backward()
        opt.step()
    ref = _reference(steps_n, global_batch, OPTIMIZERS[optimizer], unused == "1", micro_n)
    worst = max(float(np.max(np.abs(p.detach().numpy() - ref[n]) / (np.abs(ref[n]) + 1e-3)))
                for n, p in model.module.named_parameters())
    assert worst < 1e-12, f"rank {rank}: parameters differ from one process by {worst:.3g}"
    print(json.dumps({"rank": rank, "ok": True, "worst": worst}), flush=True)


def unused_error() -> None:
    dist.init_process_group("mpi", timeout=60)
    model = dist.DistributedDataParallel(_model(unused=True))
    x, y = _batches(1, 4)[0]
    try:
        _loss(model, x, y).backward()
    except dist.DistributedError as exc:
        assert "extra.weight" in str(exc) and "find_unused_parameters=True" in str(exc), exc
        print(json.dumps({"rank": dist.get_rank(), "ok": True}), flush=True)
        return
    raise AssertionError("an unused parameter must be an error")


def dead_rank(timeout: str, path: str, on_timeout: str = "raise",
              thread_level: str = "multiple") -> None:
    """Rank 1 dies; rank 0's next all_reduce must raise the timeout naming it (on_timeout
    "raise"), on the lean path of a synchronous all_reduce (_fastpath) or on the general one
    (async work); with "abort" it must end the job, printing the error, and never return."""
    import mpi4py

    mpi4py.rc.thread_level = thread_level  # before MPI starts (in init_process_group)
    world = dist.init_process_group("mpi", timeout=float(timeout), on_timeout=on_timeout)
    t = pullback.ones(4)
    dist.all_reduce(t)  # everyone is here
    if dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    from mpi4py import MPI

    levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled",
              MPI.THREAD_SERIALIZED: "serialized", MPI.THREAD_MULTIPLE: "multiple"}
    print(json.dumps({"rank": 0, "waiting_since": time.monotonic(),
                      "thread_level": levels[MPI.Query_thread()]}), flush=True)
    start = time.monotonic()
    lean = world.lean_native
    if on_timeout == "abort" and path == "lean" and lean is not None:
        # While the main thread blocks in the compiled MPI_Allreduce, its state says so.
        def report_running() -> None:
            seconds, index = lean.running()
            print(json.dumps({"rank": 0, "running_seconds": seconds,
                              "running_op": lean.names[index]}), flush=True)

        threading.Timer(float(timeout) / 2, report_running).start()
    try:
        if path == "lean":
            dist.all_reduce(t)
        else:
            dist.all_reduce(t, async_op=True).wait()
    except dist.DistributedTimeoutError as exc:
        raised_in = " ".join(os.path.basename(f.filename)
                             for f in traceback.extract_tb(exc.__traceback__))
        print(json.dumps({"rank": dist.get_rank(), "error": str(exc), "raised_in": raised_in,
                          "seconds": time.monotonic() - start}), flush=True)
        raise
    print(json.dumps({"rank": dist.get_rank(), "returned": True}), flush=True)


def checkpoint(phase: str, path: str, steps: str) -> None:
    """Phase "first": train ``steps`` steps and save at rank 0. Phase "resume": load, train
    ``steps`` more. Global batches are split among however many ranks run."""
    dist.init_process_group("mpi", timeout=60)
    rank, size = dist.get_rank(), dist.get_world_size()
    model = dist.DistributedDataParallel(_model())
    opt = OPTIMIZERS["adamw"](list(model.parameters()))
    done = 0
    if phase == "resume":
        state = pullback.load(path)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        done = int(state["step"])
    batches = _batches(done + int(steps), 8)
    share = 8 // size
    for s in range(done, done + int(steps)):
        x, y = batches[s]
        opt.zero_grad()
        _loss(model, x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]).backward()
        opt.step()
    dist.save_checkpoint({"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                          "step": done + int(steps)}, path)
    print(json.dumps({"rank": rank, "ok": True}), flush=True)


def nccl_collectives() -> None:
    """all_reduce, broadcast and all_gather of CUDA tensors through NCCL (one GPU per rank)."""
    dist.init_process_group("nccl", timeout=60)
    rank, size = dist.get_rank(), dist.get_world_size()
    t = pullback.full((5,), float(rank + 1), device=f"cuda:{rank}")
    dist.all_reduce(t, op="sum")
    np.testing.assert_allclose(t.numpy(), np.full(5, size * (size + 1) / 2))
    b = pullback.full((3,), float(rank), device=f"cuda:{rank}")
    dist.broadcast(b, src=0)
    np.testing.assert_array_equal(b.numpy(), np.zeros(3))
    out = [pullback.zeros(2, device=f"cuda:{rank}") for _ in range(size)]
    dist.all_gather(out, pullback.full((2,), float(rank), device=f"cuda:{rank}"))
    for r in range(size):
        np.testing.assert_array_equal(out[r].numpy(), np.full(2, float(r)))
    print(json.dumps({"rank": rank, "ok": True}), flush=True)


if __name__ == "__main__":
    scenario, *args = sys.argv[1:]
    try:
        globals()[scenario](*args)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
