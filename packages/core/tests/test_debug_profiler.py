"""Profiler: exact call counts and bytes on known programs, self time that excludes children
(planted with sleeping kernels), a valid Chrome trace."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import Function
from pullback.debug import profile, record_function
from pullback.dispatch import apply, state
from pullback.registry import Op


def _sleep_kernel(xp):
    def sleep(x, seconds):
        time.sleep(seconds)
        return x.copy()

    return sleep


# A throw-away op whose kernel takes a known minimum time (not registered in the op table).
SLEEP = Op("test.sleep", _sleep_kernel, save_inputs=False)
SLEEP.def_grad(lambda F, g, out, x, seconds: (g,))


def _rows(prof):
    return {(s.name, s.phase): s for s in prof.key_averages()}


def test_counts_and_bytes_of_a_known_program():
    x = pb.ones(100, requires_grad=True)
    w = pb.ones(100, requires_grad=True)
    with profile() as prof:
        h = x * w            # mul: 400 new bytes
        h2 = h.reshape(10, 10)  # view: nothing new
        loss = (h2 + 1.0).sum()
        loss.backward()
    assert state.modes == []
    rows = _rows(prof)
    calls = {key: s.calls for key, s in rows.items()}
    assert calls == {
        ("mul", "forward"): 1, ("reshape", "forward"): 1, ("add", "forward"): 1,
        ("sum", "forward"): 1, ("sum_backward", "backward"): 1,
        ("add_backward", "backward"): 1, ("reshape_backward", "backward"): 1,
        ("mul_backward", "backward"): 1,
    }
    assert rows[("mul", "forward")].bytes == 400
    assert rows[("reshape", "forward")].bytes == 0
    assert rows[("add", "forward")].bytes == 400
    assert rows[("sum", "forward")].bytes == 4
    assert rows[("add_backward", "backward")].bytes == 0   # hands its gradient through
    assert rows[("mul_backward", "backward")].bytes == 800  # one new array per input
    for s in rows.values():
        assert 0 <= s.self_ns <= s.total_ns


def test_self_time_excludes_ops_inside_a_range():
    x = pb.ones(4)
    with profile() as prof:
        with record_function("outer"):
            time.sleep(0.02)
            apply(SLEEP, x, seconds=0.03)
    rows = _rows(prof)
    outer, inner = rows[("outer", "user")], rows[("test.sleep", "forward")]
    assert inner.total_ns >= 30_000_000 and inner.self_ns == inner.total_ns
    assert outer.total_ns >= 50_000_000
    assert outer.self_ns == outer.total_ns - inner.total_ns
    assert outer.self_ns >= 20_000_000


class _SlowBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        time.sleep(0.01)
        return apply(SLEEP, g * 2.0, seconds=0.02)


def test_ops_run_by_a_function_backward_are_its_children():
    x = pb.ones(3, requires_grad=True)
    with profile() as prof:
        _SlowBackward.apply(x).sum().backward()
    rows = _rows(prof)
    fn = rows[("_SlowBackward_backward", "backward")]
    sleep = rows[("test.sleep", "backward")]  # an op run inside backward: phase backward
    mul_in_backward = rows[("mul", "backward")]
    assert ("mul", "forward") in rows  # the forward's own mul
    assert fn.self_ns == fn.total_ns - sleep.total_ns - mul_in_backward.total_ns
    assert fn.self_ns >= 10_000_000 and sleep.self_ns >= 20_000_000
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_nodes_skipped_by_grad_inputs_are_not_counted():
    a = pb.ones(3, requires_grad=True)
    b = pb.ones(3, requires_grad=True)
    with profile() as prof:
        y = (a.exp() * b.sin()).sum()
        pb.autograd.grad(y, [a])
    names = {s.name for s in prof.key_averages() if s.phase == "backward"}
    assert "exp_backward" in names and "sin_backward" not in names


def test_table_is_sorted_and_limited():
    x = pb.ones(4)
    with profile() as prof:
        apply(SLEEP, x, seconds=0.01)
        for _ in range(5):
            x = x + 1.0
    table = prof.table(row_limit=1)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Phase", "Calls", "Self", "Self", "%", "Total",
                                "Avg", "total", "Allocated"]
    assert lines[3].startswith("test.sleep") and "add" not in table.split("\n", 4)[3]
    assert "(1 more rows: row_limit=1)" in lines[-1]
    by_calls = prof.table(sort_by="calls").splitlines()
    assert by_calls[3].split()[:3] == ["add", "forward", "5"]
    with pytest.raises(ValueError, match="sort_by must be one of"):
        prof.table(sort_by="name")


def test_chrome_trace_is_valid_trace_event_json(tmp_path):
    x = pb.ones(8, requires_grad=True)
    with profile(record_shapes=True) as prof:
        with record_function("step"):
            y = apply(SLEEP, x * 3.0, seconds=0.005)
        y.sum().backward()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(path)
    trace = json.loads(path.read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["name"] for e in events} >= {"step", "mul", "test.sleep", "sum", "sum_backward",
                                           "test.sleep_backward", "mul_backward"}
    for e in events:
        assert set(e) >= {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"}
        assert isinstance(e["ts"], float) and isinstance(e["dur"], float)
        assert e["ts"] >= 0 and e["dur"] >= 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    step = next(e for e in events if e["name"] == "step")
    sleep = next(e for e in events if e["name"] == "test.sleep")
    assert step["ts"] <= sleep["ts"] and sleep["ts"] + sleep["dur"] <= step["ts"] + step["dur"]
    assert sleep["dur"] >= 5000  # microseconds
    assert sleep["args"]["input_shapes"] == [[8]]
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in trace["traceEvents"])
