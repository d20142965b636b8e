"""``trace``: run a function once under the tracer and turn what it did into a Graph.

After the function returns, the graph gets its results: the flattened outputs, the values to
write back into placeholders whose tensors or arrays were updated in place (an optimizer's
step), and the final ``.grad`` of every tensor whose gradient changed (AOTAutograd calls this
functionalization: the graph itself is pure, the writes are listed at its end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pullback.tensor import Tensor

from ._aot import Joint, trace_backward
from ._discover import Discovered, discover
from ._ir import Graph, Placeholder, Value
from ._pytree import flatten
from ._regions import Region
from ._tracer import Tracer


@dataclass(eq=False)
class Trace:
    """A graph and what running it needs besides the graph."""

    graph: Graph
    regions: list[Region] = field(default_factory=list)
    result: Any = None  # what the traced (eager) call returned
    broken: str | None = None  # why the call could not be captured (fullgraph=False)
    joint: Joint | None = None  # the outputs' backward, when they are differentiated later


def run_traced(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               found: Discovered, fullgraph: bool, name: str = "graph") -> Trace:
    """Run ``fn(*args, **kwargs)`` under a tracer; the Trace of what it did."""
    flat, _ = flatten((args, kwargs))
    graph = Graph(name=name, device=flat[0].device.type if flat else "cpu")
    tracer = Tracer(graph, found.tensors, fullgraph)
    for i, t in enumerate(flat):
        ph = graph.add_placeholder("input", f"x{i}", t.shape, t.dtype, position=i)
        tracer.bind(t, ph.value)
        tracer.watch_grad(t)
    for _, _, t in found.tensors.values():
        tracer.watch_grad(t)
    with tracer:
        result = fn(*args, **kwargs)
    trace = Trace(graph, tracer.regions, result, tracer.broken)
    if trace.broken is None:
        _finish(trace, tracer, flat, result)
        trace.broken = tracer.broken  # an unseen in-place write found while finishing
    return trace


def _finish(trace: Trace, tracer: Tracer, inputs: list[Tensor], result: Any) -> None:
    graph = trace.graph
    out_tensors, graph.output_tree = flatten(result)
    graph.outputs = [tracer.value_of(t) for t in out_tensors]
    # an output whose graph no backward consumed: eager autograd would go on through it, so
    # its backward is traced too (a compiled forward, differentiated later)
    if any(_has_live_graph(t) for t in out_tensors):
        trace.joint = trace_backward(tracer, out_tensors, inputs)
    dead = _constants_from_dead_captures(graph, tracer)
    by_input = {id(t): i for i, t in enumerate(inputs)}
    for ph in list(graph.placeholders):
        if ph in dead:
            continue
        new = _final_value(ph, tracer, inputs)
        if new is not None and new is not ph.value:
            graph.mutations.append((ph, new))
    for t, initial in tracer.grad_watch.values():
        if t.grad is initial or (id(t) not in by_input and _is_dead_capture(t, dead)):
            continue
        ph = _placeholder_for(graph, tracer, t, by_input)
        graph.grads.append((ph, None if t.grad is None else tracer.value_of(t.grad)))
    for region in trace.regions:
        # What a call must set before re-running the update's Python: the gradients the graph
        # computes (placeholders to be filled), and None where the update saw none. A gradient
        # the call finds in place already is right; inputs' tensors are new at each call.
        region.grad_state = [(t, v) for t, v in region.grad_state if id(t) not in by_input
                             and (v is None or v.producer is not None)]
    graph.verify()


def _has_live_graph(t: Tensor) -> bool:
    node: Any = t._node
    node = getattr(node, "node", node)  # a Function's OutputSlot -> its node
    return node is not None and node.edges is not None


def _final_value(ph: Placeholder, tracer: Tracer, inputs: list[Tensor]) -> Value | None:
    """The value the placeholder's tensor or array holds after the call."""
    if ph.kind == "input":
        return tracer.value_of(inputs[ph.position])  # type: ignore[index]
    if ph.kind in ("param", "buffer"):
        return tracer.value_of(ph.source)
    if ph.kind == "captured":
        return tracer.value_of(ph.source) if isinstance(ph.source, Tensor) else None
    if ph.kind == "array":
        return tracer.array_value(ph.source)
    return None  # grads are results of their own; scalars are never written


def _constants_from_dead_captures(graph: Graph, tracer: Tracer) -> set[Placeholder]:
    """Captured tensors that no longer exist (made inside the function) become constants; the
    others are read from their tensor at each call."""
    dead = set()
    for ph, tensor in tracer.captured():
        if tensor is None:
            graph.placeholders.remove(ph)
            graph.constants[ph.value] = ph.source
            dead.add(ph)
        else:
            ph.source = tensor
    return dead


def _is_dead_capture(t: Tensor, dead: set[Placeholder]) -> bool:
    return any(ph.source is t.array for ph in dead)


def _placeholder_for(graph: Graph, tracer: Tracer, t: Tensor,
                     by_input: dict[int, int]) -> Placeholder:
    """The placeholder standing for tensor ``t`` (made if ``t`` was never read)."""
    position = by_input.get(id(t))
    for ph in graph.placeholders:
        if position is not None and ph.kind == "input" and ph.position == position:
            return ph
        if ph.kind in ("param", "buffer", "captured") and ph.source is t:
            return ph
    kind, name, _ = tracer.known.get(id(t), ("captured", f"captured{len(graph.placeholders)}", t))
    return graph.add_placeholder(kind, name, t.shape, t.dtype, source=t)


def trace(fn: Callable[..., Any], *example_inputs: Any, **example_kwargs: Any) -> Graph:
    """Record what ``fn(*example_inputs)`` does into a typed SSA :class:`Graph`.

    ``fn`` may be a function or a Module. It runs once, for real (its side effects happen: a
    training step updates the parameters); every op it dispatches is recorded, nn's fused ops
    included, and so are the ops of a ``backward()`` it calls and an optimizer's update.

    Args:
        fn: the function or Module.
        *example_inputs: its positional arguments (Tensors, and nested tuples/lists/dicts).
        **example_kwargs: its keyword arguments.

    Returns:
        The Graph; ``print(graph)`` shows it. Running it reproduces the eager results (see
        :func:`pullback.compiler.run_graph`).

    Raises:
        DataDependentError: Python read a traced tensor's value (``bool(t)``, ``t.item()``...).
        TraceError: something else that cannot be recorded (random numbers, unseen in-place
            writes).
    """
    found = discover(fn)
    name = getattr(fn, "__name__", type(fn).__name__)
    return run_traced(fn, example_inputs, example_kwargs, found, fullgraph=True, name=name).graph
