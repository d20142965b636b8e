"""pullback.testing.isolation: cases run in a worker process; a crash is reported for the case
that caused it (signal, stderr) and the other cases still run; a kernel built with the
sanitizers aborts on an out-of-bounds access instead of reading garbage."""

from __future__ import annotations

import ctypes
import os
import signal
import time
from typing import Any

import numpy as np
import pytest

from pullback.testing.isolation import IsolatedRunner, sanitizer_environment


def run_case(case: dict[str, Any]) -> str | None:
    """The worker's function for these tests (the worker loads this file)."""
    if case.get("segfault"):
        ctypes.string_at(0)  # reads address 0
    if case.get("fpe"):
        os.kill(os.getpid(), signal.SIGFPE)
    if case.get("noise"):
        print("printed by the case")  # must not garble the results
        os.write(1, b"written to fd 1\n")
    if case.get("hang"):
        time.sleep(600)
    if case.get("raise"):
        raise KeyError("from the case")
    if case.get("overflow"):  # one element past the end of a 1,024-float array, in C
        from pullback import _cpu_native

        gelu = _cpu_native._function("gelu_f32", 2)
        x = np.zeros(1024, np.float32)
        y = np.empty_like(x)
        gelu(0, 1025, x.ctypes.data, y.ctypes.data)
        return None
    return None if case["n"] >= 0 else f"negative: {case['n']}"


def test_results_crashes_and_errors_each_name_their_case() -> None:
    cases = [{"n": 1}, {"n": -1, "noise": 1}, {"n": 2, "segfault": 1}, {"n": 3},
             {"n": 4, "raise": 1}, {"n": 5, "fpe": 1}, {"n": 6}]
    with IsolatedRunner(__file__, "run_case", timeout=120) as runner:
        out = runner.run(cases)
        assert [o.case for o in out] == cases
        assert [o.ok for o in out] == [True, False, False, True, False, False, True]
        assert out[1].problem == "negative: -1"
        assert "SIGSEGV" in out[2].crash and "segfault" in out[2].describe()
        assert "KeyError" in out[4].problem and out[4].crash is None
        assert "SIGFPE" in out[5].crash
        # a new worker took over after each crash; thousands of cases cost little
        assert all(o.ok for o in runner.run([{"n": i} for i in range(3000)]))


def test_a_hanging_case_is_killed_and_reported() -> None:
    with IsolatedRunner(__file__, "run_case", timeout=120) as runner:
        assert runner.run([{"n": 1}])[0].ok  # the worker is up
        runner.timeout = 1.0
        hung, after = runner.run([{"n": 2, "hang": 1}, {"n": 3}])
        assert "did not finish within 1 s" in hung.crash
        assert after.ok


def test_an_out_of_bounds_write_aborts_a_sanitized_kernel() -> None:
    env, why = sanitizer_environment()
    if env is None:
        pytest.skip(why)
    with IsolatedRunner(__file__, "run_case", env=env) as runner:
        (outcome,) = runner.run([{"n": 0, "overflow": 1}])
    assert outcome.crash is not None, "the sanitized build did not catch the overflow"
    assert "heap-buffer-overflow" in outcome.crash
