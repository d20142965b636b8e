"""Per-op telemetry: calls, total and self time, and bytes allocated, in forward and backward.

``profile`` is a dispatch mode: every op is timed around its call to the modes below and the
kernel; in backward the engine's ``on_backward_start``/``on_backward`` hooks time each node's
grad rule. Events are kept as plain tuples while profiling; the table and the Chrome trace are
built afterwards. An event's *self* time is its duration minus that of the events it encloses
(ops run by a Function's backward, by a ``create_graph`` grad rule, or inside a
:func:`record_function` range), found from the time intervals alone.

Example::

    with pullback.debug.profile() as prof:
        loss = model(x).mean()
        loss.backward()
    print(prof.table())
    prof.export_chrome_trace("trace.json")   # open in chrome://tracing or ui.perfetto.dev
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any

from .._files import write_atomic
from ..dispatch import DispatchMode, apply, state
from ..registry import Op
from ..tensor import Tensor

FORWARD, BACKWARD, USER = "forward", "backward", "user"

# One recorded interval: (name, phase, start_ns, end_ns, bytes allocated, input shapes or None).
Event = tuple[str, str, int, int, int, Any]

_SORT_KEYS = {
    "self_time": lambda s: s.self_ns,
    "total_time": lambda s: s.total_ns,
    "calls": lambda s: s.calls,
    "bytes": lambda s: s.bytes,
}


@dataclass
class OpStats:
    """Totals of one name in one phase (a row of :meth:`profile.table`)."""

    name: str
    phase: str
    calls: int = 0
    self_ns: int = 0
    total_ns: int = 0
    bytes: int = 0


def _allocated(arrays: Any, known: Any) -> int:
    """Bytes of the distinct arrays in ``arrays`` that own new memory.

    Views (``base`` set) and arrays passed through unchanged (in ``known``: the op's inputs, or
    the incoming gradient) allocated nothing.
    """
    total = 0
    seen: list[Any] = []
    for a in arrays:
        if a is None:
            continue
        if isinstance(a, Tensor):
            a = a.array
        if getattr(a, "base", None) is not None or any(a is k for k in known):
            continue
        if any(a is s for s in seen):
            continue
        seen.append(a)
        total += int(a.nbytes)
    return total


class profile(DispatchMode):  # noqa: N801 - a context manager, named like torch.profiler.profile
    """Record every op (forward) and every grad rule (backward) run in this thread.

    Args:
        record_shapes: keep the input shapes of each forward op (shown in the Chrome trace).
        synchronize: on devices other than the CPU, wait for each op to finish before reading
            the clock, so that times belong to the op that spent them.
    """

    def __init__(self, *, record_shapes: bool = False, synchronize: bool = True) -> None:
        self.record_shapes = record_shapes
        self.synchronize = synchronize
        self.events: list[Event] = []
        self._pending: dict[int, int] = {}  # id(node) -> start of its grad rule
        self._t0 = 0
        self._tid = 0

    # -- mode ----------------------------------------------------------------------------------
    def __enter__(self) -> profile:
        self._t0 = perf_counter_ns()
        self._tid = threading.get_ident()
        state.modes.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in state.modes:
            state.modes.remove(self)
        self._pending.clear()

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        start = perf_counter_ns()
        out = apply(op, *args, **attrs)
        if self.synchronize and out.device.type != "cpu":
            out.device.backend.synchronize(out.device.index or 0)
        end = perf_counter_ns()
        arrays = [a.array for a in args if isinstance(a, Tensor)]
        shapes = tuple(tuple(a.shape) for a in arrays) if self.record_shapes else None
        self.events.append((op.name, FORWARD, start, end, _allocated((out.array,), arrays), shapes))
        return out

    def on_backward_start(self, node: Any, grad_in: Any) -> None:
        self._pending[id(node)] = perf_counter_ns()

    def on_backward(self, node: Any, grad_in: Any, grads_out: tuple[Any, ...]) -> None:
        # Nodes the engine skipped (not on the way to the wanted inputs) never get here; their
        # start is dropped with the next node that reuses the id, or on exit.
        start = self._pending.pop(id(node), None)
        if start is None:
            return
        if self.synchronize and node.device.type != "cpu":
            node.device.backend.synchronize(node.device.index or 0)
        end = perf_counter_ns()
        incoming = grad_in if isinstance(grad_in, list) else [grad_in]
        known = [g.array if isinstance(g, Tensor) else g for g in incoming if g is not None]
        self.events.append((node.name + "_backward", BACKWARD, start, end,
                            _allocated(grads_out, known), None))

    # -- results -------------------------------------------------------------------------------
    def _analyse(self) -> tuple[list[int], list[str]]:
        """Per event, its self time (duration minus that of the events directly inside it) and
        its phase: an op run inside a grad rule (a Function's backward, a ``create_graph`` rule)
        belongs to the backward pass."""
        events = self.events
        order = sorted(range(len(events)), key=lambda i: (events[i][2], -events[i][3]))
        children = [0] * len(events)
        phases = [e[1] for e in events]
        open_: list[int] = []
        for i in order:
            start, end = events[i][2], events[i][3]
            while open_ and events[open_[-1]][3] <= start:
                open_.pop()
            if open_:
                parent = open_[-1]
                children[parent] += end - start
                if phases[parent] == BACKWARD and phases[i] == FORWARD:
                    phases[i] = BACKWARD
            open_.append(i)
        return [e[3] - e[2] - c for e, c in zip(events, children)], phases

    def key_averages(self) -> list[OpStats]:
        """Totals per (name, phase), in order of first appearance. Grad rules are named
        ``<op>_backward``; ``record_function`` ranges have phase ``"user"``."""
        rows: dict[tuple[str, str], OpStats] = {}
        self_times, phases = self._analyse()
        for (name, _, start, end, nbytes, _), self_ns, phase in zip(self.events, self_times,
                                                                    phases):
            row = rows.get((name, phase))
            if row is None:
                row = rows[(name, phase)] = OpStats(name, phase)
            row.calls += 1
            row.self_ns += self_ns
            row.total_ns += end - start
            row.bytes += nbytes
        return list(rows.values())

    def table(self, sort_by: str = "self_time", row_limit: int | None = 20) -> str:
        """The totals as a text table, largest first (like torch.profiler's
        ``key_averages().table()``).

        Args:
            sort_by: ``"self_time"``, ``"total_time"``, ``"calls"`` or ``"bytes"``.
            row_limit: at most this many rows (``None``: all).
        """
        if sort_by not in _SORT_KEYS:
            raise ValueError(f"table: sort_by must be one of {sorted(_SORT_KEYS)}, got {sort_by!r}")
        stats = sorted(self.key_averages(), key=_SORT_KEYS[sort_by], reverse=True)
        all_self = sum(s.self_ns for s in stats) or 1
        shown = stats if row_limit is None else stats[:row_limit]
        header = ("Name", "Phase", "Calls", "Self", "Self %", "Total", "Avg total", "Allocated")
        body = [(s.name, s.phase, str(s.calls), _ms(s.self_ns), f"{100 * s.self_ns / all_self:.1f}%",
                 _ms(s.total_ns), _ms(s.total_ns // s.calls), _bytes(s.bytes)) for s in shown]
        width = max([len(header[0])] + [len(r[0]) for r in body])
        widths = [width] + [max(len(header[k]), *(len(r[k]) for r in body)) if body
                            else len(header[k]) for k in range(1, len(header))]
        rule = "  ".join("-" * w for w in widths)

        def line(cells: tuple[str, ...]) -> str:
            return "  ".join(c.ljust(w) if k < 2 else c.rjust(w)
                             for k, (c, w) in enumerate(zip(cells, widths)))

        lines = [rule, line(header), rule, *(line(r) for r in body), rule]
        hidden = len(stats) - len(shown)
        footer = f"Self time total: {_ms(sum(s.self_ns for s in stats))}, {len(self.events)} events"
        if hidden:
            footer += f" ({hidden} more rows: row_limit={row_limit})"
        lines.append(footer)
        return "\n".join(lines)

    def trace_events(self) -> list[dict[str, Any]]:
        """The events in Chrome's trace event format (``ph: "X"``, times in microseconds)."""
        pid = os.getpid()
        out: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": pid, "tid": self._tid,
             "args": {"name": "pullback"}},
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": self._tid,
             "args": {"name": "main" if self._tid == threading.main_thread().ident
                      else str(self._tid)}},
        ]
        self_times, phases = self._analyse()
        for (name, _, start, end, nbytes, shapes), self_ns, phase in zip(self.events,
                                                                        self_times, phases):
            args: dict[str, Any] = {"bytes": nbytes, "self_us": self_ns / 1000}
            if shapes is not None:
                args["input_shapes"] = [list(s) for s in shapes]
            out.append({"name": name, "cat": phase,
                        "ph": "X", "ts": (start - self._t0) / 1000, "dur": (end - start) / 1000,
                        "pid": pid, "tid": self._tid, "args": args})
        return out

    def export_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the events as a Chrome trace (JSON) that chrome://tracing and Perfetto open."""
        write_atomic(path, json.dumps({"traceEvents": self.trace_events(),
                                       "displayTimeUnit": "ms"}), sync=False)


class record_function:  # noqa: N801 - as torch.profiler.record_function
    """Mark a range of code as one event in every active :class:`profile` of this thread.

    The ops inside it are its children: the range's self time excludes them. Without an
    active profiler it does nothing.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._profilers: list[profile] = []
        self._start = 0

    def __enter__(self) -> record_function:
        self._profilers = [m for m in state.modes if isinstance(m, profile)]
        self._start = perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        end = perf_counter_ns()
        for prof in self._profilers:
            prof.events.append((self.name, USER, self._start, end, 0, None))


def _ms(ns: int) -> str:
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e3:.1f} us"


def _bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"
