"""Graph nodes. A node is one recorded op: what it needs for backward and where gradients go.

Nodes reference their inputs, never their outputs (the output's array is kept, not the Tensor),
so a graph holds no reference cycle and is freed as soon as its last output Tensor is dropped.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from .registry import Op
from .errors import AutogradError
from .tensor import INFERENCE_VERSION, Tensor


# Creation order of graph nodes, shared by every thread (``next`` on a count is atomic).
next_node_seq = itertools.count().__next__


def _inference_tensor_error(op: Op) -> AutogradError:
    return AutogradError(
        f"op '{op.name}': an inference tensor (made under inference_mode) cannot be saved for "
        "backward; make it outside inference_mode or clone() it"
    )


class Node:
    """A recorded op application.

    Attributes:
        op: the op.
        args: the positional arguments as given (Tensors and Python scalars), for
            ``create_graph`` backward; ``None`` once the graph has been freed.
        arrays: the same arguments with Tensors replaced by their arrays, for first-order
            backward.
        attrs: the op's keyword attributes.
        out_data: the output array when the op's grad rule reads it, else ``None``.
        saved: extra arrays an ``aux`` kernel saved for its grad rule.
        device: the device the op ran on.
        edges: per argument, where its gradient goes: the producing :class:`Node` (or
            :class:`OutputSlot`), the leaf Tensor itself, or ``None`` (no gradient wanted).
        versions: ``(counter, value)`` of each saved Tensor argument at record time.
        hooks: gradient hooks registered on the output Tensor (non-leaf ``register_hook``).
        retained: weak reference to the output Tensor when ``retain_grad()`` was called.
        meta: free slot for modes (the anomaly mode keeps the creation stack here).
        seq: the node's place in the order of creation: a node's inputs were made by older
            nodes, so the engine runs nodes from the newest to the oldest (as PyTorch's
            sequence numbers).
    """

    __slots__ = (
        "op", "args", "arrays", "attrs", "out_data", "saved", "device", "edges", "versions",
        "hooks", "retained", "meta", "seq", "__weakref__",
    )
    op: Op
    args: tuple[Any, ...] | None
    arrays: list[Any] | None
    attrs: dict[str, Any]
    out_data: Any
    saved: Any
    device: Any
    edges: list[Any] | None
    versions: list[tuple[list[Any], Any]] | None
    hooks: list[Callable[..., Any]] | None
    retained: Any
    meta: Any
    seq: int

    def __init__(
        self,
        op: Op,
        args: tuple[Any, ...],
        arrays: list[Any],
        attrs: dict[str, Any],
        out_data: Any,
        saved: Any,
        device: Any,
    ) -> None:
        self.op = op
        self.device = device
        self.args = args
        self.arrays = arrays
        self.attrs = attrs
        self.out_data = out_data
        self.saved = saved
        self.hooks = self.retained = self.meta = None
        self.seq = next_node_seq()
        # One loop per case (this runs for every recorded op): inputs whose values the rule
        # reads have their version counters checked at backward time.
        edges: list[Any] = []
        if op.save_inputs:
            versions: list[tuple[list[Any], Any]] | None = []
            for a in args:
                if isinstance(a, Tensor):
                    version = a._version
                    if version is INFERENCE_VERSION:
                        raise _inference_tensor_error(op)
                    versions.append((version, version[0]))  # type: ignore[union-attr]
                    edges.append((a._node or a) if a._requires_grad else None)
                else:
                    edges.append(None)
        else:
            versions = None
            for a in args:
                edges.append((a._node or a) if isinstance(a, Tensor) and a._requires_grad
                             else None)
        self.edges = edges
        self.versions = versions

    @property
    def name(self) -> str:
        """The op's name (what debuggers and graph views show)."""
        return self.op.name

    @property
    def released(self) -> bool:
        """Whether backward already freed this node's saved values."""
        return self.args is None

    def release(self) -> None:
        """Free what backward needed (after a backward without ``retain_graph``)."""
        self.args = self.arrays = self.out_data = self.saved = None
        self.edges = None

    def __repr__(self) -> str:
        return f"<Node {self.op.name}>"


class OutputSlot:
    """Output ``index`` of a multi-output node (user-defined Functions).

    Slots are light (node, index) pairs compared by value; the node keeps the hooks of each
    output, so the node never references a slot (which would make a reference cycle).
    """

    __slots__ = ("node", "index")

    def __init__(self, node: Any, index: int) -> None:
        self.node = node
        self.index = index

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, OutputSlot) and other.node is self.node
                and other.index == self.index)

    def __hash__(self) -> int:
        return hash((id(self.node), self.index))

    @property
    def hooks(self) -> Any:
        return self.node.output_hooks.get(self.index)

    @hooks.setter
    def hooks(self, value: Any) -> None:
        self.node.output_hooks[self.index] = value

    @property
    def retained(self) -> Any:
        return self.node.output_retained.get(self.index)

    @retained.setter
    def retained(self, value: Any) -> None:
        self.node.output_retained[self.index] = value

    @property
    def name(self) -> str:
        return self.node.name

    def __repr__(self) -> str:
        return f"<OutputSlot {self.node.name}[{self.index}]>"
