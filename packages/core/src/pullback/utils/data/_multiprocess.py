"""The main process's side of DataLoader workers: start them, hand out tasks, put the batches
back in order, notice dead or silent workers, stop them (see :mod:`._workers` for the
protocol)."""

from __future__ import annotations

import builtins
import json
import multiprocessing
import time
from multiprocessing.connection import Connection, wait
from typing import Any, Iterator, cast

from ._workers import END, ERROR, decode_reply, worker_main

_POLL_SECONDS = 1.0  # how often a waiting main process checks that its workers are alive


class WorkerError(RuntimeError):
    """A DataLoader worker died, or sent nothing within the loader's ``timeout``."""


class WorkerPool:
    """``loader.num_workers`` forked worker processes, each with its pipe."""

    def __init__(self, loader: Any, base_seed: int) -> None:
        context = multiprocessing.get_context("fork")
        self.loader = loader
        self.connections: list[Any] = []
        self.processes: list[Any] = []
        for worker_id in range(loader.num_workers):
            ours, theirs = context.Pipe(duplex=True)
            process = context.Process(
                target=worker_main, name=f"pullback-dataloader-{worker_id}", daemon=True,
                args=(loader, worker_id, loader.num_workers, base_seed + worker_id, theirs))
            process.start()
            theirs.close()
            self.connections.append(ours)
            self.processes.append(process)
        self.current: MultiProcessIterator | None = None

    def send(self, worker: int, task: dict[str, Any]) -> None:
        self.connections[worker].send_bytes(json.dumps(task).encode())

    def check_alive(self) -> None:
        for process in self.processes:
            if not process.is_alive():
                raise WorkerError(f"DataLoader worker (pid {process.pid}) exited unexpectedly "
                                  f"with exit code {process.exitcode}")

    def close(self) -> None:
        """Ask the workers to stop, and make sure they do."""
        for connection in self.connections:
            try:
                connection.send_bytes(b"")
            except OSError:
                pass  # that worker is already gone
        deadline = time.monotonic() + 5.0
        for process in self.processes:
            process.join(max(deadline - time.monotonic(), 0.0))
            if process.is_alive():
                process.terminate()
                process.join()
        for connection in self.connections:
            connection.close()
        self.connections, self.processes = [], []


class MultiProcessIterator:
    """One epoch of batches from a :class:`WorkerPool`, in the order a single process would
    give them (map-style), or round-robin over the workers' streams (iterable datasets)."""

    def __init__(self, pool: WorkerPool, tasks: Iterator[list[int]] | None) -> None:
        loader = pool.loader
        self.pool, self.tasks = pool, tasks
        self.timeout = loader.timeout
        self.active = list(range(len(pool.connections)))  # workers still streaming (iterable)
        self.sent = 0  # the next task id
        self.wanted = 0  # the next task id to return
        self.outstanding: dict[int, int] = {}  # task id -> worker
        self.done: dict[int, tuple[bytes, Any]] = {}  # task id -> (kind, batch or error)
        if tasks is None:
            for worker in self.active:
                pool.send(worker, {"reset": True})
        for _ in range(loader.prefetch_factor * len(pool.connections)):
            self._send_next()

    def _send_next(self) -> None:
        task: dict[str, Any]
        if self.tasks is not None:
            indices = next(self.tasks, None)
            if indices is None:
                return
            worker, task = self.sent % len(self.pool.connections), {"indices": indices}
        else:
            if not self.active:
                return
            worker, task = self.active[self.sent % len(self.active)], {}
        task["id"] = self.sent
        self.pool.send(worker, task)
        self.outstanding[self.sent] = worker
        self.sent += 1

    def __iter__(self) -> MultiProcessIterator:
        return self

    def __next__(self) -> Any:
        while True:
            if self.wanted in self.done:
                kind, value = self.done.pop(self.wanted)
                self.wanted += 1
                if kind == END:
                    continue
                self._send_next()
                if kind == ERROR:
                    raise _reraise(value)
                return value
            if not self.outstanding:
                self._finish()
                raise StopIteration
            self._receive()

    def _receive(self) -> None:
        """Wait for at least one reply (checking the workers stay alive) and file it."""
        waiting = {self.pool.connections[w] for w in self.outstanding.values()}
        started = time.monotonic()
        while True:
            ready = cast(list[Connection], wait(list(waiting), timeout=_POLL_SECONDS))
            if ready:
                break
            self.pool.check_alive()
            if self.timeout and time.monotonic() - started > self.timeout:
                raise WorkerError(f"DataLoader timed out after {self.timeout} seconds")
        for connection in ready:
            try:
                message = connection.recv_bytes()
            except (EOFError, OSError):
                process = self.pool.processes[self.pool.connections.index(connection)]
                process.join(5.0)  # a killed worker's pipe closes before it is reaped
                raise WorkerError(f"DataLoader worker (pid {process.pid}) exited unexpectedly "
                                  f"with exit code {process.exitcode}") from None
            kind, task_id, value = decode_reply(message)
            worker = self.outstanding.pop(task_id)
            if kind == END and worker in self.active:
                self.active.remove(worker)
            self.done[task_id] = (kind, value)

    def drain(self) -> None:
        """Collect the replies of tasks still in flight (an epoch left early), so that a
        persistent pool starts its next epoch clean."""
        self.tasks = iter(())
        self.active = []
        while self.outstanding:
            self._receive()
        self.done.clear()

    def _finish(self) -> None:
        if not self.pool.loader.persistent_workers and self.pool.processes:
            self.pool.close()

    def __del__(self) -> None:  # an epoch left early, or an error: stop one-epoch workers
        try:
            self._finish()
        except Exception:
            pass  # interpreter shutdown: the daemon workers die with it


def _reraise(error: dict[str, Any]) -> BaseException:
    """The worker's exception, raised here with its traceback in the message (as PyTorch)."""
    message = f"Caught {error['type']} in DataLoader worker process.\nOriginal {error['trace']}"
    cls = getattr(builtins, error["type"], None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(message)
        except TypeError:  # an exception type that wants other arguments
            pass
    return RuntimeError(message)
