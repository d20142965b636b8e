"""Workers in child processes that run one case at a time, for the ONNX conformance and fuzz
scripts: a worker that passes the timeout or dies is replaced and its case reported as
``timeout`` or ``crash``, so one hang or segfault costs one case, not the run."""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.connection import Connection, wait
from typing import Any, Callable


class ChildPool:
    """``jobs`` processes running ``target(conn, *args)``: the target sends ``"ready"``, then
    answers each case it receives with a tuple whose first item is the case."""

    def __init__(self, jobs: int, target: Callable[..., None], args: tuple[Any, ...],
                 timeout: float) -> None:
        self.target, self.args, self.timeout = target, args, timeout
        self.context = mp.get_context("spawn")
        self.idle: list[tuple[Any, Connection]] = [self._start() for _ in range(jobs)]
        self.busy: dict[Connection, tuple[Any, Any, float]] = {}

    def _start(self) -> tuple[Any, Connection]:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=self.target, args=(child, *self.args),
                                       daemon=True)
        process.start()
        if not parent.poll(300) or parent.recv() != "ready":
            raise RuntimeError("a worker process did not start")
        return process, parent

    def run(self, cases: list[Any], report: Callable[..., None],
            failed: Callable[[Any, str, str], None]) -> None:
        """Send every case; ``report(*answer)`` for each answer, ``failed(case, "timeout" or
        "crash", detail)`` for each case that killed or hung its worker."""
        pending = list(reversed(cases))
        while pending or self.busy:
            while pending and self.idle:
                process, conn = self.idle.pop()
                case = pending.pop()
                conn.send(case)
                self.busy[conn] = (process, case, time.monotonic())
            for conn in wait(list(self.busy), timeout=0.5):
                process, case, _ = self.busy.pop(conn)
                try:
                    answer = conn.recv()
                except EOFError:
                    process.join(5)
                    failed(case, "crash", f"exit code {process.exitcode}")
                    self.idle.append(self._start())
                    continue
                report(*answer)
                self.idle.append((process, conn))
            now = time.monotonic()
            for conn, (process, case, started) in list(self.busy.items()):
                if now - started > self.timeout:
                    process.kill()
                    process.join()
                    del self.busy[conn]
                    failed(case, "timeout", f"over {self.timeout:.0f} s")
                    self.idle.append(self._start())

    def close(self) -> None:
        for process, conn in self.idle:
            conn.send(None)
            process.join(10)
