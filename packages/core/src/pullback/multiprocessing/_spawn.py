"""``spawn`` and ``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and report a
failure as PyTorch's ``torch.multiprocessing.spawn`` does."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback
from typing import Any, Callable


class ProcessException(Exception):
    """A process started by :func:`spawn` failed (PyTorch's base class)."""

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid


class ProcessRaisedException(ProcessException):
    """A process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a nonzero code or was killed by a signal."""

    def __init__(self, msg: str, error_index: int, error_pid: int, exit_code: int,
                 signal_name: str | None = None) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name


def _run(fn: Callable[..., Any], i: int, args: tuple[Any, ...], errors: Any) -> None:
    """The body of each process: ``fn(i, *args)``, its traceback sent back on failure."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is stopping everyone
    except Exception:
        errors.send_bytes(traceback.format_exc().encode())
        sys.exit(1)


class ProcessContext:
    """The processes :func:`start_processes` started (``join=False`` returns it)."""

    def __init__(self, processes: list[Any], error_pipes: list[Any]) -> None:
        self.processes = processes
        self.error_pipes = error_pipes
        self._sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids."""
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Wait for processes (at most ``timeout`` seconds); True once all have finished.

        Raises:
            ProcessRaisedException: a process raised (the others are terminated).
            ProcessExitedException: a process exited with a nonzero code or a signal.
        """
        if not self._sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self._sentinels), timeout=timeout)
        failed = None
        for sentinel in ready:
            index = self._sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0 and failed is None:
                failed = index
        if failed is None:
            return not self._sentinels
        for process in self.processes:
            if process.is_alive():
                process.terminate()
            process.join()
        self._sentinels.clear()
        self._raise(failed)
        return True  # not reached

    def _raise(self, index: int) -> None:
        process, pipe = self.processes[index], self.error_pipes[index]
        if pipe.poll():
            trace = pipe.recv_bytes().decode()
            raise ProcessRaisedException(
                f"\n\n-- Process {index} terminated with the following error:\n{trace}",
                index, process.pid)
        code = process.exitcode
        if code < 0:
            name = signal.Signals(-code).name
            raise ProcessExitedException(f"process {index} terminated with signal {name}",
                                         index, process.pid, code, name)
        raise ProcessExitedException(f"process {index} terminated with exit code {code}",
                                     index, process.pid, code)


def start_processes(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1,
                    join: bool = True, daemon: bool = False,
                    start_method: str = "spawn") -> ProcessContext | None:
    """Run ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process started by
    ``start_method``; wait for them unless ``join=False`` (then return the context)."""
    ctx = multiprocessing.get_context(start_method)
    processes, pipes = [], []
    for i in range(nprocs):
        receiver, sender = ctx.Pipe(duplex=False)
        process = ctx.Process(target=_run, args=(fn, i, args, sender), daemon=daemon)
        process.start()
        sender.close()
        processes.append(process)
        pipes.append(receiver)
    context = ProcessContext(processes, pipes)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn: Callable[..., Any], args: tuple[Any, ...] = (), nprocs: int = 1,
          join: bool = True, daemon: bool = False,
          start_method: str = "spawn") -> ProcessContext | None:
    """``torch.multiprocessing.spawn``: :func:`start_processes` with the ``spawn`` method.

    Example::

        def train(rank, model):
            ...

        if __name__ == "__main__":
            model = Net().share_memory()
            pullback.multiprocessing.spawn(train, args=(model,), nprocs=2)
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
