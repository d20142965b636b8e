"""Graph nodes. A node is one recorded op: what it needs for backward and where gradients go.

Nodes reference their inputs, never their outputs (the output's array is kept, not the Tensor),
so a graph holds no reference cycle and is freed as soon as its last output Tensor is dropped.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Callable

from .registry import Op
from .errors import AutogradError


# Creation order of graph nodes, shared by every thread (``next`` on a count is atomic).
next_node_seq = itertools.count().__next__
_current = operator.itemgetter(0)


def inference_tensor_error(op: Op) -> AutogradError:
    """The error for an inference tensor that ``op`` would save for backward."""
    return AutogradError(
        f"op '{op.name}': an inference tensor (made under inference_mode) cannot be saved for "
        "backward; make it outside inference_mode or clone() it"
    )


def check_saved_versions(node: Any) -> None:
    """Refuse a backward through ``node`` (a :class:`Node` or a Function's node) if a tensor it
    saved was modified in place since it was recorded (its flat ``versions`` tuple)."""
    versions = node.versions
    # The counters' values now against those recorded, compared by C loops (this runs for
    # every node that saved its inputs).
    if tuple(map(_current, versions[::2])) == versions[1::2]:
        return
    for counter, value in zip(versions[::2], versions[1::2]):
        if counter[0] != value:
            saved_by = node.name if node.op is None else f"op '{node.name}'"
            raise AutogradError(
                f"a tensor saved by {saved_by} for backward was modified in place afterwards "
                f"(its version is {counter[0]}, expected {value}); use an out-of-place op or "
                "clone() it first"
            )


class Node:
    """A recorded op application, made by :func:`pullback.dispatch.apply` (which fills the slots
    itself: a constructor call costs a tenth of a small op's recording).

    Attributes:
        op: the op.
        arrays: the positional arguments with Tensors replaced by their arrays (Python scalars
            as given); ``None`` once the graph has been freed. The node keeps no input Tensor
            but the constants below: ``recorded_inputs`` (in the engine) rebuilds the
            arguments as Tensors for ``create_graph`` backward. As PyTorch's saved variables:
            a chain of ops then does not keep each intermediate Tensor object alive until the
            backward, where Python's cyclic collector would scan them again and again.
        constants: ``None``, or, when a Tensor argument needs no gradient, the arguments with
            each such Tensor in its place and ``None`` elsewhere (graph views name them).
        attrs: the op's keyword attributes.
        out_data: the output array when the op's grad rule reads it, else ``None``.
        saved: extra arrays an ``aux`` kernel saved for its grad rule.
        device: the device the op ran on.
        edges: per argument, where its gradient goes: the producing :class:`Node` (or
            :class:`OutputSlot`), the leaf Tensor itself, or ``None`` (no gradient wanted).
        versions: the version counter and its value at record time of each saved Tensor
            argument, as one flat tuple ``(counter, value, counter, value...)`` (a tuple of
            pairs would cost a tuple per input on every recorded op); ``None`` for an op that
            saves no inputs.
        hooks: gradient hooks registered on the output Tensor (non-leaf ``register_hook``).
        retained: weak reference to the output Tensor when ``retain_grad()`` was called.
        meta: free slot for modes (the anomaly mode keeps the creation stack here).
        extra: ``None``, or the :class:`NodeExtras` that holds ``hooks``, ``retained`` and
            ``meta`` once one of them is set (one slot for three rarely used ones: the engine
            tests it once per node).
        seq: the node's place in the order of creation (:func:`next_node_seq`): a node's
            inputs were made by older nodes, so the engine runs nodes from the newest to the
            oldest (as PyTorch's sequence numbers).
    """

    __slots__ = (
        "op", "arrays", "constants", "attrs", "out_data", "saved", "device", "edges", "versions",
        "extra", "seq", "__weakref__",
    )
    op: Op
    arrays: tuple[Any, ...] | None
    constants: tuple[Any, ...] | None
    attrs: dict[str, Any]
    out_data: Any
    saved: Any
    device: Any
    edges: list[Any] | None
    versions: tuple[Any, ...] | None
    extra: NodeExtras | None
    seq: int

    def _extras(self) -> NodeExtras:
        if self.extra is None:
            self.extra = NodeExtras()
        return self.extra

    @property
    def hooks(self) -> list[Callable[..., Any]] | None:
        return None if self.extra is None else self.extra.hooks

    @hooks.setter
    def hooks(self, value: list[Callable[..., Any]] | None) -> None:
        self._extras().hooks = value

    @property
    def retained(self) -> Any:
        return None if self.extra is None else self.extra.retained

    @retained.setter
    def retained(self, value: Any) -> None:
        self._extras().retained = value

    @property
    def meta(self) -> Any:
        return None if self.extra is None else self.extra.meta

    @meta.setter
    def meta(self, value: Any) -> None:
        self._extras().meta = value

    @property
    def name(self) -> str:
        """The op's name (what debuggers and graph views show)."""
        return self.op.name

    @property
    def released(self) -> bool:
        """Whether backward already freed this node's saved values."""
        return self.edges is None

    def release(self) -> None:
        """Free what backward needed (after a backward without ``retain_graph``)."""
        self.arrays = self.constants = self.out_data = self.saved = None
        self.edges = None

    def __repr__(self) -> str:
        return f"<Node {self.op.name}>"


class NodeExtras:
    """The rarely set attributes of a :class:`Node` (see ``Node.extra``)."""

    __slots__ = ("hooks", "retained", "meta")

    def __init__(self) -> None:
        self.hooks: list[Callable[..., Any]] | None = None
        self.retained: Any = None
        self.meta: Any = None


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
