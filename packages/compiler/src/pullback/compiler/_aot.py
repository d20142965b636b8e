"""Compiled forwards whose outputs are differentiated later (AOTAutograd's partition).

When a compiled call's outputs still carry an autograd graph (``compile(model)`` used in an eager
training loop that calls ``loss.backward()`` itself), the trace goes on: the backward of the
outputs is traced too, with *tangent* placeholders standing for the gradients that will arrive,
into the same joint graph. The joint graph is then cut in two. The forward graph computes the
outputs and whatever the backward needs of the forward's values; the backward graph computes, from
those saved values and the tangents, the gradient of every tensor the forward read that requires
grad. Each is optimized and lowered on its own.

A call runs the forward program inside a :class:`pullback.autograd.Function`, whose node the
eager engine later reaches: its ``backward`` runs the backward program, and the engine sends
the gradients to the parameters' ``.grad`` as for any op. The Function saves its leaf inputs for
backward, so an in-place change to them before backward is the error it is in eager mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pullback.autograd import Function, grad
from pullback.tensor import Tensor

from ._executor import Program
from ._ir import Graph, Node, Placeholder, Value


@dataclass(eq=False)
class Joint:
    """What tracing the backward added to a forward graph."""

    leaves: list[Placeholder] = field(default_factory=list)  # differentiated, in order
    tangents: list[Placeholder] = field(default_factory=list)  # one per differentiable output
    differentiable: list[int] = field(default_factory=list)  # positions in graph.outputs
    gradients: list[Value | None] = field(default_factory=list)  # per leaf


def trace_backward(tracer: Any, outputs: list[Tensor], inputs: list[Tensor]) -> Joint:
    """Trace the gradient of ``outputs`` with respect to every leaf they depend on."""
    graph: Graph = tracer.graph
    joint = Joint()
    leaves = []
    for ph in graph.placeholders:
        t = inputs[ph.position] if ph.position is not None else ph.source
        if ph.kind in ("input", "param", "buffer", "captured") and isinstance(t, Tensor) and \
                t._requires_grad and t._node is None:
            joint.leaves.append(ph)
            leaves.append(t)
    roots: list[Tensor] = []
    tangents: list[Tensor] = []
    for i, out in enumerate(outputs):
        if out._node is None:
            continue
        tangent = Tensor._wrap(np.zeros_like(out.array), out.device)
        ph = graph.add_placeholder("tangent", f"tangent{len(tangents)}", out.shape, out.dtype)
        tracer.bind(tangent, ph.value)
        joint.tangents.append(ph)
        joint.differentiable.append(i)
        roots.append(out)
        tangents.append(tangent)
    with tracer:
        grads = grad(roots, leaves, grad_outputs=tangents, retain_graph=True, allow_unused=True)
    joint.gradients = [None if g is None else tracer.value_of(g) for g in grads]
    return joint


@dataclass(eq=False)
class Partition:
    """The two graphs, and how the forward's results feed the backward."""

    forward: Graph
    backward: Graph
    n_outputs: int  # the forward's first results are the outputs; the saved values follow
    saved: list[Value]  # forward values the backward reads, in its placeholders' order


def partition(graph: Graph, joint: Joint) -> Partition:
    """Cut the joint graph: the forward is what the outputs need; the backward the rest."""
    needed: set[Value] = set(v for v in graph.result_values())
    forward_nodes: list[Node] = []
    for node in reversed(graph.nodes):
        if any(v in needed for v in node.outputs):
            forward_nodes.append(node)
            needed.update(node.input_values())
    forward_nodes.reverse()
    in_forward = set(map(id, forward_nodes))
    backward_nodes = [n for n in graph.nodes if id(n) not in in_forward]
    produced_backward = {v for n in backward_nodes for v in n.outputs}
    tangents = {ph.value for ph in joint.tangents}
    saved: list[Value] = []
    for node in backward_nodes:
        for v in node.input_values():
            if v not in produced_backward and v not in tangents and v not in graph.constants \
                    and v not in saved:
                saved.append(v)
    for g in joint.gradients:  # a gradient that is a forward value (or a placeholder)
        if g is not None and g not in produced_backward and g not in tangents and \
                g not in graph.constants and g not in saved:
            saved.append(g)

    forward = Graph(placeholders=[ph for ph in graph.placeholders if ph.kind != "tangent"],
                    constants=dict(graph.constants), nodes=forward_nodes,
                    outputs=[*graph.outputs, *saved], output_tree=graph.output_tree,
                    mutations=list(graph.mutations), grads=list(graph.grads),
                    device=graph.device, name=graph.name + ".forward")
    backward = Graph(constants=dict(graph.constants), nodes=backward_nodes,
                     outputs=list(v for v in joint.gradients), device=graph.device,
                     name=graph.name + ".backward")
    # The backward reads the saved values and the tangents, in that order, as placeholders. A
    # saved value gets a Value of its own there: the forward's is produced by a forward node,
    # which a pass following producers (``reshape(reshape(x))``) would reach into, reading
    # forward values that the backward graph does not have.
    own: dict[Value, Value] = {}
    for k, v in enumerate(saved):
        ph = backward.add_placeholder("saved", f"saved{k}", v.shape, v.dtype, position=k)
        ph.value.weak = v.weak
        own[v] = ph.value
    backward.substitute(own)
    for j, ph in enumerate(joint.tangents):
        backward.placeholders.append(Placeholder("tangent", ph.name, ph.value, position=j))
    return Partition(forward, backward, len(graph.outputs), saved)


class _CompiledForward(Function):
    """The node a compiled forward leaves in the eager graph (see the module docstring)."""

    @staticmethod
    def forward(ctx: Any, run: Any, *leaves: Tensor) -> Any:
        outputs, differentiable, backward = run()
        ctx.save_for_backward(*leaves)
        ctx.run_backward = backward
        ctx.mark_non_differentiable(*(o for i, o in enumerate(outputs)
                                      if i not in differentiable and isinstance(o, Tensor)))
        return tuple(outputs)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        ctx.saved_tensors  # noqa: B018 - checks that no leaf was modified in place since
        return (None, *ctx.run_backward(grads))


@dataclass(eq=False)
class AotProgram:
    """The lowered forward and backward, and how to call them."""

    partition: Partition
    joint: Joint
    forward: Program
    backward: Program
    backward_graph: Graph

    def run(self, leaves: list[Tensor], forward_inputs: list[Any], device: Any,
            write_results: Any) -> Any:
        """Run the forward under a Function node: the output Tensors, flat. ``write_results``
        splits the forward's arrays into the output Tensors (writing mutations back) and the
        values saved for the backward."""
        p = self.partition
        differentiable = [i for i in self.joint.differentiable]
        positions = {i: k for k, i in enumerate(differentiable)}

        def run() -> Any:
            outputs, saved = write_results(self.forward.run(forward_inputs))

            def backward(grads: tuple[Any, ...]) -> list[Any]:
                tangents = []
                for i in differentiable:
                    g = grads[i]
                    tangents.append(g.array if isinstance(g, Tensor) else
                                    np.zeros(p.forward.outputs[i].shape,  # type: ignore[union-attr]
                                             p.forward.outputs[i].dtype))  # type: ignore[union-attr]
                arrays = self.backward.run(list(saved) + tangents)
                it = iter(arrays)
                return [None if v is None else Tensor._wrap(next(it), device)
                        for v in self.joint.gradients]

            return outputs, set(positions), backward

        return _CompiledForward.apply(run, *leaves)
