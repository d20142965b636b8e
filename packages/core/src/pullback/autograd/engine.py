"""The backward engine: one topological order, then one reversed loop (no recursion).

First-order backward runs each grad rule on raw arrays through the backend's
:class:`~pullback.dispatch.RawNamespace`; ``create_graph=True`` runs the same rules on Tensors,
so the gradients are themselves differentiable. While a mode that records backward is active
(the compiler's tracer), a first-order backward runs its rules on Tensors too, through dispatch,
with first-order semantics: the mode sees each op, and no graph of the backward is built.
"""

from __future__ import annotations

import itertools
import operator
import threading
from heapq import heappop, heappush
from operator import is_not
import weakref
from typing import Any, Callable, Sequence

from .._host_memory import advise_heap_growth
from ..dispatch import first_order_tensor_namespace, raw_namespace, state, tensor_namespace
from ..errors import AutogradError, DeviceError, ShapeError
from ..tensor import Tensor
from ..graph import Node, OutputSlot, check_saved_versions

# Hooks that run once a leaf's .grad holds this backward's whole gradient (PyTorch's
# register_post_accumulate_grad_hook): id(leaf) -> (weak reference to it, hooks). Kept out of
# Tensor's slots so that the engine pays for them only when one exists (an empty dict is one
# truth test per backward), and keyed by id because Tensor's == is elementwise.
POST_ACCUMULATE_HOOKS: dict[int, tuple[weakref.ref, list[Callable[[Tensor], None]]]] = {}


def post_accumulate_hooks(tensor: Tensor, create: bool = False) -> list[Callable[[Tensor], None]]:
    """The post-accumulate hooks of ``tensor`` (a new, registered list when ``create``)."""
    entry = POST_ACCUMULATE_HOOKS.get(id(tensor))
    if entry is not None and entry[0]() is tensor:
        return entry[1]
    if not create:
        return []
    key = id(tensor)
    hooks: list[Callable[[Tensor], None]] = []
    POST_ACCUMULATE_HOOKS[key] = (
        weakref.ref(tensor, lambda _: POST_ACCUMULATE_HOOKS.pop(key, None)), hooks)
    return hooks

# Callbacks queued during a backward (queue_callback), run when it has finished: one list per
# running backward, innermost last, per thread.
_callbacks = threading.local()


def queue_callback(callback: Callable[[], None]) -> None:
    """Run ``callback()`` once the backward now running has finished (every .grad written),
    as PyTorch's ``Variable._execution_engine.queue_callback``: a gradient hook uses it to act
    on the whole step (a data-parallel wrapper waits for its last reductions there)."""
    stack = getattr(_callbacks, "stack", None)
    if not stack:
        raise AutogradError("queue_callback can only be called while a backward is running "
                            "(from a gradient hook)")
    stack[-1].append(callback)


_FREED = (
    "trying to backward through the graph a second time (or after its saved values were "
    "freed): op '{}'. Pass retain_graph=True to the first backward if you need to do this"
)


def _topological_order(roots: list[Any]) -> list[Any]:
    """Nodes reachable from ``roots``, every node after all the nodes it depends on.

    A node's inputs were made by older nodes, so the order of creation (``seq``) is a
    topological order: one walk collects the nodes and a sort orders them (a depth-first
    order costs twice the walk's steps in Python).
    """
    seen = set(roots)
    stack = list(seen)
    while stack:
        for edge in stack.pop().edges or ():
            if edge.__class__ is not Node:
                if edge is None or isinstance(edge, Tensor):
                    continue
                edge = _owner(edge)
            if edge not in seen:
                seen.add(edge)
                stack.append(edge)
    return sorted(seen, key=_creation_order)


_creation_order = operator.attrgetter("seq")


def _owner(edge: Any) -> Any:
    """The node that receives a gradient sent along ``edge`` (a Node or an OutputSlot)."""
    return edge.node if edge.__class__ is OutputSlot else edge


def _reaching(order: list[Any], wanted_nodes: set[Any], wanted_leaves: set[int]) -> set[Any]:
    """Nodes that are wanted or from which a wanted node or leaf is reachable.

    ``order`` lists every node after the nodes it depends on, so one pass suffices.
    """
    reach: set[Any] = set()
    for node in order:
        if node in wanted_nodes:
            reach.add(node)
            continue
        for edge in node.edges or ():
            if edge is None:
                continue
            if isinstance(edge, Tensor):
                if id(edge) in wanted_leaves:
                    reach.add(node)
                    break
            elif _owner(edge) in reach:
                reach.add(node)
                break
    return reach


def _root_gradient(root: Tensor, gradient: Any, index: int) -> Any:
    if gradient is None:
        if root.array.size != 1:
            raise AutogradError(
                f"grad can be implicitly created only for scalar outputs: output {index} has "
                f"shape {tuple(root.shape)}; pass gradient= (a tensor of that shape)"
            )
        return root.device.backend.xp.ones_like(root.array)
    if isinstance(gradient, Tensor):
        g = gradient
    else:
        g = Tensor._wrap(root.device.backend.asarray(gradient, dtype=root.dtype,
                                                     index=root.device.index or 0), root.device)
    if tuple(g.shape) != tuple(root.shape):
        raise ShapeError(
            f"backward: gradient {index} has shape {tuple(g.shape)} but its output has shape "
            f"{tuple(root.shape)}"
        )
    if g.device is not root.device:
        raise DeviceError(f"backward: gradient {index} is on {g.device} but its output is on "
                          f"{root.device}")
    if g.dtype != root.dtype:
        # As PyTorch: the incoming gradient takes its output's dtype, so that every rule sees
        # one dtype (a float32 gradient would otherwise round a float64 graph's gradients).
        # Differentiable, for create_graph.
        g = g.to(root.dtype)
    return g


def run_backward(
    roots: Sequence[Tensor],
    gradients: Sequence[Any],
    *,
    retain_graph: bool,
    create_graph: bool,
    inputs: Sequence[Tensor] | None = None,
    accumulate: bool = True,
) -> list[Any] | None:
    """Propagate ``gradients`` from ``roots`` back through the graph.

    With ``accumulate`` the results go into the ``.grad`` of leaves (only those in ``inputs``
    when given); otherwise the gradients of ``inputs`` are returned (``None`` where unreached).
    """
    advise_heap_growth()  # the heap a forward pass grew gets huge pages (see _host_memory)
    # Gradients are Tensors under create_graph, and while a mode records the backward's ops.
    on_tensors = create_graph or any(m.records_backward for m in state.modes)
    root_grads: list[tuple[Any, Any]] = []  # (node or leaf tensor, gradient)
    for i, (root, gradient) in enumerate(zip(roots, gradients)):
        if not isinstance(root, Tensor):
            raise TypeError(f"backward: output {i} is {type(root).__name__}, not a Tensor")
        if not root._requires_grad:
            raise AutogradError(
                f"output {i} (shape {tuple(root.shape)}) does not require grad and has no "
                "graph: nothing to differentiate (was it computed under no_grad, or from "
                "tensors without requires_grad=True?)"
            )
        g = _root_gradient(root, gradient, i)
        if on_tensors and not isinstance(g, Tensor):
            g = Tensor._wrap(g, root.device)
        elif not on_tensors and isinstance(g, Tensor):
            g = g.array.copy() if root._node is None else g.array
        root_grads.append((root._node if root._node is not None else root, g))

    wanted_nodes: set[Any] = set()
    wanted_leaves: set[int] = set()
    if inputs is not None:
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"inputs[{i}] is {type(t).__name__}, not a Tensor")
            if not t._requires_grad:
                raise AutogradError(f"inputs[{i}] (shape {tuple(t.shape)}) does not require grad")
            if t._node is None:
                wanted_leaves.add(id(t))
            else:
                wanted_nodes.add(t._node)

    # Explicit inputs, and leaves with post-accumulate hooks, need the whole graph first (which
    # nodes lead to a wanted input; how many gradients each hooked leaf will get).
    order = (_topological_order([_owner(n) for n, _ in root_grads if not isinstance(n, Tensor)])
             if inputs is not None or (POST_ACCUMULATE_HOOKS and accumulate) else None)
    # With explicit inputs, only the part of the graph that leads to them is run.
    reach = (
        None
        if inputs is None
        else _reaching(order, {_owner(n) for n in wanted_nodes}, wanted_leaves)  # type: ignore[arg-type]
    )

    grads: dict[Any, Any] = {}
    # The nodes that hold a gradient, as (-seq, node), newest first: a node's consumers are
    # newer than it, so when it is popped every gradient it will get has arrived (PyTorch's
    # engine orders its ready queue by sequence number alike). Nodes that no gradient reaches
    # are never visited.
    ready: list[tuple[int, Any]] = []
    leaf_grads: dict[int, list[Any]] = {}  # id -> [tensor, gradient]
    captured: dict[Any, Any] = {}
    handed: set[int] = set()  # gradient arrays already given to a .grad (see _accumulate)
    # Leaves with post-accumulate hooks are finished as soon as their last gradient arrives
    # (so a data-parallel wrapper can send a gradient while backward goes on), not at the end.
    pending = (_pending_contributions(order, root_grads)  # type: ignore[arg-type]
               if POST_ACCUMULATE_HOOKS and accumulate and reach is None else None)

    def send(edge: Any, gi: Any, add: Callable[[Any, Any], Any]) -> None:
        # ``add`` is the backend's add kernel (threaded on the CPU) or Tensor addition.
        if isinstance(edge, Tensor):
            if reach is not None and id(edge) not in wanted_leaves:
                return
            slot = leaf_grads.get(id(edge))
            if slot is None:
                slot = leaf_grads[id(edge)] = [edge, gi]
            else:
                slot[1] = add(slot[1], gi)
            if pending is not None and id(edge) in pending:
                pending[id(edge)] -= 1
                if not pending[id(edge)]:
                    del leaf_grads[id(edge)]
                    _accumulate(edge, slot[1], handed, on_tensors)
                    _run_post_accumulate_hooks(edge)
        elif reach is not None and _owner(edge) not in reach:
            return
        elif edge.__class__ is OutputSlot:
            node = edge.node
            per_output = grads.get(node)
            if per_output is None:
                per_output = grads[node] = [None] * node.n_outputs
                heappush(ready, (-node.seq, node))
            prev = per_output[edge.index]
            per_output[edge.index] = gi if prev is None else add(prev, gi)
        else:
            prev = grads.get(edge)
            if prev is None:
                grads[edge] = gi
                heappush(ready, (-edge.seq, edge))
            else:
                grads[edge] = add(prev, gi)

    for target, g in root_grads:
        send(target, g, operator.add)

    prev_enabled = state.grad_enabled
    state.grad_enabled = create_graph
    modes = state.modes
    stack = getattr(_callbacks, "stack", None)
    if stack is None:
        stack = _callbacks.stack = []
    queued: list[Callable[[], None]] = []
    stack.append(queued)
    # The namespace of the rules: Tensors (create_graph, or a mode recording the backward),
    # else the raw arrays of each node's backend (looked up when the device changes).
    F: Any = (tensor_namespace if create_graph
              else first_order_tensor_namespace if on_tensors else None)
    raw = F is None
    F_device: Any = None
    # Gradient buffers that the engine made for a slice op (an op with an "accumulate_into"
    # rule: its rule's fresh output, or a sum with it) and has not handed to anyone yet: the
    # gradient of another slice of the same tensor is added into them in place. Plain
    # first-order backward only: modes and explicit inputs see every rule run.
    in_place = not create_graph and reach is None and not modes
    # Gradients for leaves go straight into leaf_grads unless explicit inputs or
    # post-accumulate hooks need ``send``'s checks.
    direct = reach is None and pending is None
    owned: set[int] = set()
    try:
        while ready:
            node = heappop(ready)[1]
            g = grads.pop(node)
            if owned:
                owned.discard(id(g))
            if node.edges is None:
                raise AutogradError(_FREED.format(node.name))
            if raw and node.device is not F_device:
                F_device = node.device
                F = raw_namespace(F_device.type)
            is_op_node = node.__class__ is Node
            edges = node.edges
            in_grads: tuple[Any, ...]
            ins: Sequence[Any]
            if modes:
                for mode in modes:
                    mode.on_backward_start(node, g)
            if is_op_node:
                if node.extra is not None:  # hooks, retain_grad
                    g = _output_hooks(node, g, on_tensors, node.device)
                if wanted_nodes and node in wanted_nodes:
                    captured[node] = g
                    if not _feeds(node, reach, wanted_leaves):
                        continue
                op = node.op
                accumulate_into = op._accumulate_into if in_place else None
                if accumulate_into is not None and _added_in_place(accumulate_into, node, g,
                                                                   grads, owned):
                    edges = in_grads = ins = ()  # nothing left to send; released below
                elif raw:  # the first-order rule on raw arrays (_run_rule's case, inlined)
                    rule = op._grad
                    if rule is None:
                        raise _no_grad_rule(op)
                    if node.versions:
                        check_saved_versions(node)
                    kwargs = node.attrs
                    if node.saved is not None:
                        kwargs = {**kwargs, "saved": node.saved}
                    if op._grad_wants_needs:
                        kwargs = {**kwargs, "needs": tuple(map(is_not, edges, _NONES))
                                  if reach is None else _needs(node, reach, wanted_leaves)}
                    ins = node.arrays  # type: ignore[assignment]  # not None: checked above
                    in_grads = rule(F, g, node.out_data, *ins, **kwargs)
                    if in_grads.__class__ is not tuple:  # the count: zip(strict=True) below
                        raise _wrong_count(op, in_grads, ins)
                else:
                    in_grads, ins = _run_rule(node, g, F, reach, wanted_leaves)
            else:  # a user-defined Function's node, possibly several outputs
                slots = [OutputSlot(node, k) for k in range(node.n_outputs)]
                g = [
                    None if gi is None else _output_hooks(slots[k], gi, on_tensors, node.device)
                    for k, gi in enumerate(g)
                ]
                for k, slot in enumerate(slots):
                    if slot in wanted_nodes and g[k] is not None:
                        captured[slot] = g[k]
                if reach is not None and not _feeds(node, reach, wanted_leaves):
                    continue
                in_grads, ins = node.run_backward(g, on_tensors, _needs(node, reach, wanted_leaves))
                accumulate_into = None
            try:
                for edge, gi, x in zip(edges, in_grads, ins, strict=True):
                    if edge is None or gi is None:
                        continue
                    if gi.shape != x.shape:
                        gi = _fit_shape(F, node, gi, x)
                    if gi.dtype is not x.dtype and gi.dtype != x.dtype:
                        gi = F.cast(gi, dtype=x.dtype)
                    if edge.__class__ is Node and reach is None:  # the common cases, inlined
                        prev = grads.get(edge)
                        if prev is None:
                            grads[edge] = gi
                            heappush(ready, (-edge.seq, edge))
                            if accumulate_into is not None:
                                owned.add(id(gi))
                        else:
                            total = grads[edge] = F.add(prev, gi)
                            if accumulate_into is not None or (owned and id(prev) in owned):
                                owned.discard(id(prev))
                                owned.add(id(total))
                    elif direct and isinstance(edge, Tensor):
                        slot = leaf_grads.get(id(edge))
                        if slot is None:
                            leaf_grads[id(edge)] = [edge, gi]
                        else:
                            slot[1] = F.add(slot[1], gi)
                    else:
                        send(edge, gi, F.add)
            except ValueError:  # zip's, when the rule returned too few or too many gradients
                if len(in_grads) != len(ins):
                    raise _wrong_count(node.op, in_grads, ins) from None
                raise
            if modes:
                for mode in modes:
                    mode.on_backward(node, g, in_grads)
            if not retain_graph:
                if is_op_node:
                    node.arrays = node.constants = node.out_data = node.saved = node.edges = None
                else:
                    node.release()
    except BaseException:
        stack.pop()
        raise
    finally:
        state.grad_enabled = prev_enabled
    try:
        result = _finish_leaves(leaf_grads, captured, inputs, accumulate, on_tensors, handed)
    finally:
        stack.pop()
    for callback in queued:
        callback()
    return result


def _pending_contributions(order: list[Any], root_grads: list[tuple[Any, Any]]) -> dict[int, int]:
    """For each leaf that has post-accumulate hooks, how many gradients will be sent to it (one
    per edge from a node of ``order``, or as a root)."""
    hooked = POST_ACCUMULATE_HOOKS.keys()
    counts: dict[int, int] = {}
    for target, _ in root_grads:
        if isinstance(target, Tensor) and id(target) in hooked:
            counts[id(target)] = counts.get(id(target), 0) + 1
    for node in order:
        for edge in node.edges or ():
            if isinstance(edge, Tensor) and id(edge) in hooked:
                counts[id(edge)] = counts.get(id(edge), 0) + 1
    return counts


def _run_post_accumulate_hooks(tensor: Tensor) -> None:
    for hook in tuple(post_accumulate_hooks(tensor)):
        hook(tensor)


def _fit_shape(F: Any, node: Any, gi: Any, x: Any) -> Any:
    """Sum a broadcast gradient down to its input's shape (and say so when it cannot be)."""
    try:
        return F.sum_to(gi, shape=tuple(x.shape))
    except Exception as exc:
        raise AutogradError(
            f"grad rule of op '{node.name}' returned a gradient of shape {tuple(gi.shape)} "
            f"for an input of shape {tuple(x.shape)}"
        ) from exc


_NONES = itertools.repeat(None)


def _needs(node: Any, reach: set[Any] | None, wanted_leaves: set[int]) -> tuple[bool, ...]:
    """Per input of ``node``, whether its gradient is wanted."""
    if reach is None:
        return tuple(map(is_not, node.edges, _NONES))  # a C loop: `e is not None` per edge
    return tuple(
        e is not None
        and ((id(e) in wanted_leaves) if isinstance(e, Tensor) else _owner(e) in reach)
        for e in node.edges
    )


def _feeds(node: Any, reach: set[Any] | None, wanted_leaves: set[int]) -> bool:
    """Whether running ``node``'s rule sends a gradient anywhere wanted."""
    return reach is None or any(_needs(node, reach, wanted_leaves))


def _run_rule(
    node: Node, g: Any, F: Any, reach: set[Any] | None, wanted_leaves: set[int],
) -> tuple[Any, Any]:
    """Run ``node``'s grad rule on Tensors (``create_graph``, or a mode recording the
    backward): returns the gradients and the inputs they are for. The engine runs the
    first-order rule on raw arrays itself."""
    op = node.op
    rule = op._grad
    if rule is None:
        raise _no_grad_rule(op)
    if node.versions:
        check_saved_versions(node)
    kwargs = node.attrs
    if node.saved is not None and not F.differentiable:
        saved = tuple(None if s is None else Tensor._wrap(s, node.device) for s in node.saved)
        kwargs = {**kwargs, "saved": saved}
    if op._grad_wants_needs:
        kwargs = {**kwargs, "needs": _needs(node, reach, wanted_leaves)}
    ins = recorded_inputs(node)
    out = None
    if node.out_data is not None:
        out = Tensor._wrap(node.out_data, node.device)
        out._node, out._requires_grad = node, True
    result = rule(F, g, out, *ins, **kwargs)
    if result.__class__ is not tuple or len(result) != len(ins):
        raise _wrong_count(op, result, ins)
    return result, ins


def _added_in_place(accumulate_into: Callable[..., Any], node: Node, g: Any,
                    grads: dict[Any, Any], owned: set[int]) -> bool:
    """For a slice op (an ``accumulate_into`` rule): when the gradient buffer of the sliced
    tensor is the engine's own (``owned``), add ``g`` into its slice in place and say so."""
    edge = node.edges[0]  # type: ignore[index]
    target = grads.get(edge) if edge.__class__ is Node else None
    if target is None or id(target) not in owned:
        return False
    accumulate_into(target, g, **node.attrs)
    return True


def _no_grad_rule(op: Any) -> AutogradError:
    return AutogradError(f"op '{op.name}' has no grad rule (it is not differentiable)")


def _wrong_count(op: Any, result: Any, ins: Sequence[Any]) -> AutogradError:
    got = len(result) if isinstance(result, (tuple, list)) else type(result).__name__
    return AutogradError(
        f"grad rule of op '{op.name}' must return a tuple of {len(ins)} gradients "
        f"(one per input), got {got}"
    )


def recorded_inputs(node: Node) -> tuple[Any, ...]:
    """The op node's arguments as they were when it was recorded: Tensors, and the other
    arguments (Python scalars, None) as given (a node keeps its inputs' arrays and edges, not
    the Tensors: see ``Node.arrays``).

    A leaf or constant argument that still holds the recorded array comes back as itself. Any
    other Tensor argument (a non-leaf, or one that a recorded in-place op re-pointed at a new
    array since) comes back as a new Tensor around the recorded array, whose gradient goes
    where the argument's went (its edge) and, for an op that saved its inputs, with the
    argument's version counter (so an in-place write is still caught in a double backward).
    """
    device, constants, versions = node.device, node.constants, node.versions
    # Not None: the callers checked that the node is live (no assert on this path).
    arrays, edges = node.arrays, node.edges
    inputs: list[Any] = []
    tensors = 0  # Tensor arguments so far: their (counter, value) pairs are in ``versions``
    for k, (array, edge) in enumerate(zip(arrays, edges)):  # type: ignore[arg-type]
        given = edge if isinstance(edge, Tensor) else constants[k] if constants else None
        if edge is None and given is None:
            inputs.append(array)
            continue
        if given is not None and given.array is array:
            inputs.append(given)
        else:
            t = Tensor._wrap(array, device)
            if edge is not None:
                t._node, t._requires_grad = edge, True
            if versions:
                t._version = versions[2 * tensors]
            inputs.append(t)
        tensors += 1
    return tuple(inputs)


def _output_hooks(node: Any, g: Any, on_tensors: bool, device: Any) -> Any:
    """Run ``register_hook`` hooks and ``retain_grad`` of a non-leaf output."""
    if node.hooks:
        for hook in node.hooks:
            result = hook(g if isinstance(g, Tensor) else Tensor._wrap(g, device))
            if result is not None:
                g = result if on_tensors else result.array
    if node.retained is not None:
        t = node.retained()
        if t is not None:
            new = g if isinstance(g, Tensor) else Tensor._wrap(g.copy(), t.device)
            t.grad = new if t.grad is None else Tensor._wrap(t.grad.array + new.array, t.device)
    return g


def _leaf_hooks(tensor: Tensor, g: Any, on_tensors: bool) -> Any:
    """``g`` after ``tensor``'s ``register_hook`` hooks (each may replace it)."""
    for hook in tensor._hooks or ():
        hooked = hook(g if isinstance(g, Tensor) else Tensor._wrap(g, tensor.device))
        if hooked is not None:
            g = hooked if on_tensors else hooked.array
    return g


def _accumulate(tensor: Tensor, g: Any, handed: set[int], on_tensors: bool) -> None:
    """Run ``tensor``'s gradient hooks on ``g`` and add the result into its ``.grad``."""
    g = _leaf_hooks(tensor, g, on_tensors)
    if isinstance(g, Tensor):
        tensor.grad = g if tensor.grad is None else tensor.grad + g
        return
    # A gradient array may be shared (add's rule hands one array to both inputs) or be a
    # view of another; each .grad must own its memory since optimizers update it in place.
    if g.base is not None or id(g) in handed:
        g = g.copy()
    handed.add(id(g))
    old = tensor.grad
    if old is None:
        tensor.grad = Tensor._wrap(g, tensor.device)
    elif old._node is None and old.array.shape == g.shape:
        old.array += g
    else:
        tensor.grad = Tensor._wrap(old.array + g, tensor.device)


def _finish_leaves(
    leaf_grads: dict[int, list[Any]],
    captured: dict[Any, Any],
    inputs: Sequence[Tensor] | None,
    accumulate: bool,
    on_tensors: bool,
    handed: set[int],
) -> list[Any] | None:
    results: dict[int, Any] = {}
    for tensor, g in leaf_grads.values():
        if not accumulate:
            results[id(tensor)] = _leaf_hooks(tensor, g, on_tensors)
            continue
        _accumulate(tensor, g, handed, on_tensors)
        if POST_ACCUMULATE_HOOKS:
            _run_post_accumulate_hooks(tensor)
    if accumulate:
        return None
    assert inputs is not None
    out: list[Any] = []
    for t in inputs:
        g = results.get(id(t)) if t._node is None else captured.get(t._node)
        if g is not None and not isinstance(g, Tensor):
            g = Tensor._wrap(g, t.device)
        out.append(g)
    return out
