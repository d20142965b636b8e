"""Sequences and optionals: a sequence is a Python list of Tensors, an absent optional is
None. ``SequenceMap`` runs its body once per element."""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback as pb

from . import NodeContext, converter, ints, optional, scalar


def _position(position: Any, length: int, insert: bool = False) -> int:
    p = int(scalar(position))
    p = p + length if p < 0 else p
    if not 0 <= p <= length - (0 if insert else 1):
        raise IndexError(f"sequence position {int(scalar(position))} of a sequence of "
                         f"{length}")
    return p


@converter("SequenceEmpty")
def _sequence_empty(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [[]]


@converter("SequenceConstruct")
def _sequence_construct(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                        ) -> list[Any]:
    return [list(ins)]


@converter("SequenceAt")
def _sequence_at(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [ins[0][_position(ins[1], len(ins[0]))]]


@converter("SequenceInsert")
def _sequence_insert(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    sequence = list(ins[0])
    where = _position(ins[2], len(sequence), insert=True) if optional(ins, 2) is not None \
        else len(sequence)
    sequence.insert(where, ins[1])
    return [sequence]


@converter("SequenceErase")
def _sequence_erase(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    sequence = list(ins[0])
    where = _position(ins[1], len(sequence)) if optional(ins, 1) is not None \
        else len(sequence) - 1
    del sequence[where]
    return [sequence]


@converter("SequenceLength")
def _sequence_length(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [pb.tensor(np.array(len(ins[0]), np.int64))]


@converter("SplitToSequence")
def _split_to_sequence(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                       ) -> list[Any]:
    x, split = ins[0], optional(ins, 1)
    axis = int(attrs.get("axis", 0)) % x.ndim
    if split is None:  # pieces of one, the axis dropped unless keepdims
        parts = [x.narrow(axis, i, 1) for i in range(x.shape[axis])]
        return [parts if attrs.get("keepdims", 1) else [p.squeeze(axis) for p in parts]]
    sizes = ints(split)
    if split.ndim == 0:  # pieces of that size, the last one smaller
        step = sizes[0]
        sizes = [min(step, x.shape[axis] - s) for s in range(0, x.shape[axis], step)]
    parts, start = [], 0
    for size in sizes:
        parts.append(x.narrow(axis, start, size))
        start += size
    return [parts]


@converter("ConcatFromSequence")
def _concat_from_sequence(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                          ) -> list[Any]:
    parts = ins[0]
    axis = int(attrs["axis"])
    if attrs.get("new_axis", 0):
        return [pb.stack(parts, axis=axis % (parts[0].ndim + 1))]
    return [pb.cat(parts, axis=axis % parts[0].ndim)]


@converter("SequenceMap")
def _sequence_map(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    """The body on each element of the sequence inputs (tensor inputs passed whole)."""
    body = attrs["body"]
    length = len(ins[0])
    outputs: list[list[Any]] = [[] for _ in range(node.outputs)]
    for i in range(length):
        args = [x[i] if isinstance(x, list) else x for x in ins]
        for collected, value in zip(outputs, node.run_graph(body, args, node.scope)):
            collected.append(value)
    return outputs


@converter("Optional")
def _optional(ins: list[Any], attrs: dict[str, Any], node: NodeContext) -> list[Any]:
    return [optional(ins, 0)]


@converter("OptionalHasElement")
def _optional_has_element(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                          ) -> list[Any]:
    return [pb.tensor(np.array(optional(ins, 0) is not None))]


@converter("OptionalGetElement")
def _optional_get_element(ins: list[Any], attrs: dict[str, Any], node: NodeContext
                          ) -> list[Any]:
    if ins[0] is None:
        raise ValueError("OptionalGetElement of an empty optional")
    return [ins[0]]

