"""Run test cases in a child Python process, so that a crash is a result, not the end.

Native kernels are C: an argument they were never meant to get can kill the process (SIGSEGV,
SIGFPE, a sanitizer's abort). A test that calls them directly would take pytest down with it;
:class:`IsolatedRunner` hands batches of cases to a worker process instead, reads one result per
case, and when the worker dies reports the signal (and the end of its stderr, where a sanitizer
writes its report) for the case it was running, then carries on with the rest in a new worker.

A case is a JSON value (a dict of numbers, strings, lists). The function under test is named by
the file that defines it (test helpers are often not importable by module name)::

    runner = IsolatedRunner("/path/to/cases.py", "run_case")
    for outcome in runner.run([{"n": 3}, {"n": -1}]):
        assert outcome.ok, outcome.describe()
    runner.close()

``run_case(case)`` returns ``None`` when the case passed, else a string saying what was wrong;
an exception it raises is a failure too. Batching many cases per message keeps the cost of a
case near the cost of the call itself.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class Outcome:
    """What one case gave: ``problem`` (``None``: passed) and, when the worker died running
    it, ``crash`` (the signal or exit status, and the end of the worker's stderr)."""

    case: Any
    problem: str | None = None
    crash: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None and self.crash is None

    def describe(self) -> str:
        """One paragraph for an assertion message: the case and what went wrong."""
        what = f"crashed the process: {self.crash}" if self.crash else self.problem
        return f"case {json.dumps(self.case)}: {what}"


def _exit_description(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


# How long a worker may take to import pullback and the cases' file.
_STARTUP_SECONDS = 300.0


def _read_lines(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


class IsolatedRunner:
    """A worker process running ``function`` (defined in the Python file ``path``) on cases.

    Args:
        path: the file that defines ``function``.
        function: its name; it takes one case and returns ``None`` or a problem string.
        env: extra environment variables of the worker (e.g. ``LD_PRELOAD`` for a sanitizer).
        timeout: seconds a batch may take before the worker is killed and the case in progress
            reported as hanging.
    """

    def __init__(self, path: str | os.PathLike[str], function: str,
                 env: Mapping[str, str] | None = None, timeout: float = 300.0) -> None:
        self.path = os.fspath(path)
        self.function = function
        self.env = {**os.environ, **(env or {})}
        self.timeout = timeout
        self._process: subprocess.Popen[str] | None = None
        self._stderr: Any = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    def _start(self) -> subprocess.Popen[str]:
        if self._process is None or self._process.poll() is not None:
            self._stderr = tempfile.TemporaryFile(mode="w+")
            self._process = subprocess.Popen(
                [sys.executable, "-m", "pullback.testing._isolated_worker", self.path,
                 self.function],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
                env=self.env, bufsize=1)
            # A thread reads the results: select() on a buffered pipe misses lines that are
            # already in the buffer. None marks the end (the worker exited or died).
            self._lines = queue.Queue()
            threading.Thread(target=_read_lines, args=(self._process.stdout, self._lines),
                             daemon=True).start()
            # Imports (and first builds of native kernels) do not count against the timeout.
            try:
                ready = self._lines.get(timeout=max(self.timeout, _STARTUP_SECONDS))
            except queue.Empty:
                ready = None
            if ready is None:
                self._process.kill()
                raise RuntimeError(f"the worker for {self.path}:{self.function} did not start: "
                                   f"{self._died(self._process)}")
        return self._process

    def _stderr_tail(self, limit: int = 3000) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        text = self._stderr.read()
        # A sanitizer's report says what went wrong; the Python traceback after it says where.
        for marker in ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer"):
            start = text.find(marker)
            if start >= 0:
                return text[max(start - 200, 0):][:limit].strip()
        return text[-limit:].strip()

    def run(self, cases: Sequence[Any]) -> list[Outcome]:
        """One :class:`Outcome` per case, in order."""
        outcomes: list[Outcome] = []
        pending = list(cases)
        while pending:
            done, crash = self._run_batch(pending)
            outcomes += [Outcome(case, problem) for case, problem in zip(pending, done)]
            pending = pending[len(done):]
            if crash is not None:
                outcomes.append(Outcome(pending[0], crash=crash))
                pending = pending[1:]
        return outcomes

    def _run_batch(self, cases: list[Any]) -> tuple[list[str | None], str | None]:
        """The problems of the cases run before the worker stopped, and why it stopped
        (``None``: it ran them all)."""
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        results: list[str | None] = []
        try:
            process.stdin.write(json.dumps(cases) + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            return results, self._died(process)
        deadline = time.monotonic() + self.timeout
        while len(results) < len(cases):
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                process.kill()
                return results, self._died(process, f"did not finish within {self.timeout:g} s")
            if line is None:
                return results, self._died(process)
            results.append(json.loads(line)["problem"])
        return results, None

    def _died(self, process: subprocess.Popen[str], why: str = "") -> str:
        code = process.wait()
        tail = self._stderr_tail()
        self._process = None
        return (why or _exit_description(code)) + (f"; stderr ends with:\n{tail}" if tail else "")

    def close(self) -> None:
        """Stop the worker."""
        if self._process is not None and self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> IsolatedRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Workers:
    """One :class:`IsolatedRunner` per kind for a cases file, made on first use: ``"plain"``,
    and ``"sanitized"`` (native kernels built with ASan and UBSan, see
    :func:`sanitizer_environment`). Close it to stop them."""

    def __init__(self, path: str | os.PathLike[str], function: str) -> None:
        self.path, self.function = path, function
        self._made: dict[str, IsolatedRunner] = {}

    def get(self, kind: str, unavailable: Any = None) -> IsolatedRunner:
        """The runner of ``kind``. Where sanitizers are unavailable, ``unavailable(why)`` is
        called (``pytest.skip``, say) or, without it, a RuntimeError raised."""
        if kind not in self._made:
            env: dict[str, str] | None = {}
            if kind == "sanitized":
                env, why = sanitizer_environment()
                if env is None:
                    if unavailable is not None:
                        unavailable(why)
                    raise RuntimeError(why)
            elif kind != "plain":
                raise ValueError(f"Workers.get: kind must be 'plain' or 'sanitized', got {kind!r}")
            self._made[kind] = IsolatedRunner(self.path, self.function, env=env)
        return self._made[kind]

    def close(self) -> None:
        """Stop every worker."""
        for runner in self._made.values():
            runner.close()
        self._made.clear()


def sanitizer_environment(sanitizers: str = "address,undefined") -> tuple[dict[str, str] | None,
                                                                           str]:
    """The environment of a worker whose native kernels (:mod:`pullback.native`) are built
    with ``-fsanitize=<sanitizers>``, every report fatal: ``(env, "")``, or ``(None, why)``
    where the compiler cannot build with them or has no shared ASan runtime to preload (Python
    itself is not instrumented, so the runtime must be loaded first)."""
    compiler = os.environ.get("CC", "cc")
    try:
        probe = subprocess.run([compiler, f"-fsanitize={sanitizers}", "-shared", "-fPIC", "-x",
                                "c", "-", "-o", os.devnull], input="int f(int a){return a;}\n",
                               capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"no C compiler {compiler!r} ({exc})"
    if probe.returncode != 0:
        return None, (f"{compiler} cannot build with -fsanitize={sanitizers}: "
                      f"{probe.stderr.strip()[-300:]}")
    env = {"PULLBACK_NATIVE_SANITIZE": sanitizers,
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    if "address" in sanitizers:
        runtime = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True,
                                 text=True).stdout.strip()
        if not os.path.isabs(runtime) or not os.path.exists(runtime):
            return None, f"{compiler} has no shared ASan runtime to preload (got {runtime!r})"
        env["LD_PRELOAD"] = runtime
    return env, ""


def fuzz_in_isolation(runner: IsolatedRunner, strategy: Any, total: int, batch: int = 40) -> int:
    """Draw at least ``total`` cases from the Hypothesis ``strategy`` and run them with
    ``runner``, ``batch`` per worker message; an AssertionError names the first case that
    failed or crashed. Returns how many cases ran.

    Batches stay within what Hypothesis draws for one example (8 KiB of choices), and are not
    shrunk (slow for a batch; the message already names the case). Needs ``hypothesis`` (a
    test dependency, imported here only).
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    ran = [0]

    @settings(max_examples=-(-total // batch), database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=(Phase.generate,))
    @given(st.lists(strategy, min_size=batch, max_size=batch))
    def run_batch(cases: list[Any]) -> None:
        ran[0] += len(cases)
        failed = [o for o in runner.run(cases) if not o.ok]
        assert not failed, (f"{len(failed)} of {len(cases)} cases failed; first: "
                            f"{failed[0].describe()}")

    run_batch()
    return ran[0]
