"""Control flow: ``If``, ``Loop`` and ``Scan``. Their bodies are subgraphs, checked when the
model is imported and run by ``node.run_graph`` with the enclosing graph's values in scope.
The path a model takes depends on its data, so :func:`pullback.compiler.compile` replays one
path only (it guards on what it read)."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb

from . import NodeContext, converter, optional, scalar


@converter("If")
def _if(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    branch = attrs["then_branch"] if bool(scalar(ins[0])) else attrs["else_branch"]
    return node.run_graph(branch, [], node.scope)


def _stack(parts: list[Any]) -> Any:
    return pb.stack(parts, axis=0) if parts else pb.zeros((0,), dtype=np.float32)


@converter("Loop")
def _loop(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """``for i in range(M)`` while ``cond``: the body maps (i, cond, carried...) to
    (cond, carried..., scan outputs...); the scan outputs are stacked along a new axis 0."""
    body = attrs["body"]
    trips = optional(ins, 0)
    trips = int(scalar(trips)) if trips is not None else None
    cond = optional(ins, 1)
    keep_going = bool(scalar(cond)) if cond is not None else True
    carried = list(ins[2:])
    scans: list[list[Any]] = []
    i = 0
    while keep_going and (trips is None or i < trips):
        outputs = node.run_graph(body, [pb.tensor(np.array(i, np.int64)),
                                        pb.tensor(np.array(keep_going))] + carried, node.scope)
        keep_going = bool(scalar(outputs[0])) if cond is not None or trips is None else True
        carried = list(outputs[1:1 + len(carried)])
        step_scans = outputs[1 + len(carried):]
        if not scans:
            scans = [[] for _ in step_scans]
        for collected, value in zip(scans, step_scans):
            collected.append(value)
        i += 1
    scan_count = node.outputs - len(carried)
    scans += [[] for _ in range(scan_count - len(scans))]
    return carried + [_stack(s) for s in scans]


@converter("Scan", since=9)
def _scan(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """The body runs once per slice of the scan inputs (along their axes, reversed where a
    direction is 1), carrying the state; each scan output stacks the body's slices."""
    body = attrs["body"]
    n_scan = int(attrs["num_scan_inputs"])
    states, sequences = list(ins[:len(ins) - n_scan]), list(ins[len(ins) - n_scan:])
    in_axes = list(attrs.get("scan_input_axes", [0] * n_scan))
    in_dirs = list(attrs.get("scan_input_directions", [0] * n_scan))
    in_axes = [a % s.ndim for a, s in zip(in_axes, sequences)]
    steps = sequences[0].shape[in_axes[0]] if sequences else 0
    n_out = node.outputs - len(states)
    out_axes = list(attrs.get("scan_output_axes", [0] * n_out))
    out_dirs = list(attrs.get("scan_output_directions", [0] * n_out))
    collected: list[list[Any]] = [[] for _ in range(n_out)]
    for t in range(steps):
        slices = [s.narrow(a, steps - 1 - t if d else t, 1).squeeze(a)
                  for s, a, d in zip(sequences, in_axes, in_dirs)]
        outputs = node.run_graph(body, states + slices, node.scope)
        states = list(outputs[:len(states)])
        for parts, value in zip(collected, outputs[len(states):]):
            parts.append(value)
    results = []
    for parts, axis, direction in zip(collected, out_axes, out_dirs):
        if direction:
            parts = parts[::-1]
        stacked = pb.stack(parts, axis=0)
        results.append(stacked.movedim(0, axis % stacked.ndim))
    return states + results
