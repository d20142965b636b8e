"""The tracer: a dispatch mode that records every op into a :class:`~pullback.compiler.Graph`.

Tracing is concrete, as ``make_fx`` is: every op runs for real on the example inputs (so shapes,
dtypes and nn's fused ops need nothing special) and is recorded as it runs. Values are found by
the identity of the backend array a Tensor holds, so the Tensors that backward makes around
arrays it saved (an op's output, an ``aux`` kernel's saved values) find their values, and so do
tensors re-pointed by a recorded in-place op. A tensor's version counter is checked when it is
read: a change the tracer did not see (an in-place write outside dispatch) is an error, never a
stale value.

A tensor the tracer has not seen is a placeholder: a parameter or buffer when it belongs to a
module the compiled function uses, a ``.grad`` of one, or a *captured* tensor otherwise (read
afresh at each call; captured tensors that no longer exist after the trace become constants).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from pullback.debug._source import capture_stack, source_line, user_frames
from pullback.dispatch import DispatchMode, apply, draw_random, run_array_update
from pullback.promotion import promote
from pullback.registry import Op
from pullback.tensor import Tensor

from ._ir import Graph, Placeholder, Value
from ._regions import RecordingNamespace, Region
from .errors import DataDependentError, TraceError

_LITERALS = (int, float, bool, complex, str, type(None), np.generic, np.dtype, type, slice,
             type(Ellipsis))


@dataclass(eq=False)
class _Binding:
    """The value an array holds now; ``counter``/``version`` of the tensor that held it (a
    version of ``None`` is taken at the next read)."""

    array: Any
    value: Value
    counter: list[Any] | None
    version: int | None


def user_location(skip: int = 1) -> tuple[str, int, str] | None:
    """``(file, line, function)`` of the innermost frame outside pullback."""
    frames = user_frames(capture_stack(skip + 1))
    return frames[0] if frames else None


def describe_location(where: tuple[str, int, str] | None) -> str:
    if where is None:
        return "inside pullback"
    filename, line, func = where
    text = source_line(filename, line)
    return f"{filename}:{line} in {func}" + (f": {text}" if text else "")


class Tracer(DispatchMode):
    """Records ops (forward, backward and array updates) while the traced function runs.

    Args:
        graph: the graph to fill (its positional-input placeholders already bound).
        known: ``id(tensor) -> (kind, name)`` for parameters and buffers.
        fullgraph: raise on a data-dependent read; otherwise remember why (``broken``) and let
            the call finish eagerly.
    """

    records_backward = True

    def __init__(self, graph: Graph, known: dict[int, tuple[str, str, Tensor]],
                 fullgraph: bool) -> None:
        self.graph = graph
        self.known = known
        self.fullgraph = fullgraph
        self.broken: str | None = None
        self.regions: list[Region] = []
        self._arrays: dict[int, _Binding] = {}
        self._grad_of: dict[int, Tensor] = {}  # id(t.grad) -> t, for known tensors
        self._captured: list[tuple[Placeholder, weakref.ref[Tensor]]] = []
        # tensors whose .grad a call must restore: id -> (tensor, .grad when first seen)
        self.grad_watch: dict[int, tuple[Tensor, Any]] = {}
        self._persistent: set[int] = set()
        self._scalar_slots = 0
        for _, _, t in known.values():
            if t.grad is not None:
                self._grad_of[id(t.grad)] = t

    # -- values ------------------------------------------------------------------------------
    def bind(self, t: Tensor, value: Value) -> None:
        """``t`` holds ``value`` from now on."""
        self._arrays[id(t.array)] = _Binding(t.array, value, t._version, t._version[0])

    def bind_array(self, array: Any, value: Value) -> None:
        self._arrays[id(array)] = _Binding(array, value, None, None)

    def rebind_array(self, array: Any, value: Value) -> None:
        """``array`` was written in place with ``value`` (its tensor's version is re-read)."""
        old = self._arrays.get(id(array))
        counter = old.counter if old is not None and old.array is array else None
        self._arrays[id(array)] = _Binding(array, value, counter, None)

    def is_persistent(self, array: Any) -> bool:
        """Whether ``array`` is read by a placeholder (a parameter's, an optimizer state's)."""
        return id(array) in self._persistent

    def binding(self, t: Tensor) -> _Binding | None:
        b = self._arrays.get(id(t.array))
        return b if b is not None and b.array is t.array else None

    def value_of(self, t: Tensor) -> Value:
        """The value ``t`` holds (a new placeholder for a tensor not seen before)."""
        b = self.binding(t)
        if b is None:
            return self._capture(t)
        if b.counter is t._version:
            if b.version is None:
                b.version = t._version[0]
            elif b.version != t._version[0]:
                self._fail(TraceError(
                    f"a tensor of shape {tuple(t.shape)} was modified in place in a way the "
                    f"compiler cannot see (its version went from {b.version} to "
                    f"{t._version[0]}), before {describe_location(user_location(2))}; use "
                    "out-of-place ops in a compiled function"))
        return b.value

    def array_value(self, array: Any, owner: Any = None) -> Value:
        """The value a raw array holds (an "array" placeholder when not seen before)."""
        b = self._arrays.get(id(array))
        if b is not None and b.array is array:
            return b.value
        for _, _, t in self.known.values():
            if t.array is array:
                return self._capture(t)
            if t.grad is not None and t.grad.array is array:
                return self._capture(t.grad)
        path = _state_path(array, owner)
        name = (f"{type(owner).__name__}.state[{self._param_name(path[1])}].{path[2]}"
                if path is not None else f"array{len(self._persistent)}")
        ph = self.graph.add_placeholder("array", name, array.shape, array.dtype, source=array)
        ph.path = path
        self._persistent.add(id(array))
        self.bind_array(array, ph.value)
        return ph.value

    def _param_name(self, param: Any) -> str:
        known = self.known.get(id(param))
        return known[1] if known is not None else "?"

    def scalar_placeholder(self) -> Placeholder:
        """A new runtime-number placeholder (an optimizer's step size), numbered in order."""
        ph = self.graph.add_placeholder("scalar", f"scalar{self._scalar_slots}", (),
                                        np.float64, source=self._scalar_slots)
        self._scalar_slots += 1
        return ph

    def _capture(self, t: Tensor) -> Value:
        known = self.known.get(id(t))
        owner = self._grad_owner(t)
        if known is not None:
            kind, name = known[0], known[1]
            ph = self.graph.add_placeholder(kind, name, t.shape, t.dtype, source=t)
        elif owner is not None:
            name = self.known[id(owner)][1] + ".grad"
            ph = self.graph.add_placeholder("grad", name, t.shape, t.dtype, source=owner)
        else:
            n = sum(p.kind == "captured" for p in self.graph.placeholders)
            ph = self.graph.add_placeholder("captured", f"captured{n}", t.shape, t.dtype,
                                            source=t.array)
            self._captured.append((ph, weakref.ref(t)))
        if ph.kind != "grad":  # a gradient is a new array at every call
            self._persistent.add(id(t.array))
        self.watch_grad(t)
        self.bind(t, ph.value)
        return ph.value

    def _grad_owner(self, t: Tensor) -> Tensor | None:
        """The known tensor whose ``.grad`` ``t`` is (when the call started), if any."""
        owner = self._grad_of.get(id(t))
        return owner if owner is not None and owner.grad is t else None

    def watch_grad(self, t: Tensor) -> None:
        if id(t) not in self.grad_watch and (t._requires_grad or t.grad is not None):
            self.grad_watch[id(t)] = (t, t.grad)

    def captured(self) -> list[tuple[Placeholder, Tensor | None]]:
        """Captured placeholders and their tensors (``None`` once a tensor no longer exists)."""
        return [(ph, ref()) for ph, ref in self._captured]

    def argument(self, a: Any) -> Any:
        """An op argument as a node input: Values for Tensors and known arrays."""
        if isinstance(a, Tensor):
            return self.value_of(a)
        if isinstance(a, (tuple, list)):
            return tuple(self.argument(x) for x in a)
        if isinstance(a, _LITERALS):
            return a
        if hasattr(a, "shape") and hasattr(a, "dtype"):
            b = self._arrays.get(id(a))
            if b is not None and b.array is a:
                return b.value
            return self.graph.add_constant(a)
        raise TraceError(f"cannot record an op argument of type {type(a).__name__}")

    def _check_attrs(self, op: Op, attrs: dict[str, Any]) -> None:
        """Arrays hidden in attributes (an advanced index) must not hold traced values."""
        for key, v in attrs.items():
            for a in _arrays_in(v):
                b = self._arrays.get(id(a))
                if b is not None and b.array is a and b.value not in self.graph.constants:
                    self._fail(DataDependentError(
                        f"op '{op.name}' got a traced tensor inside its '{key}' attribute (an "
                        f"index built from data) at {describe_location(user_location(3))}; "
                        "this is data-dependent and cannot be compiled"))

    # -- recording -----------------------------------------------------------------------------
    def record_raw(self, op_name: str, inputs: list[Any], attrs: dict[str, Any],
                   result: Any) -> Value:
        """Record an op whose result array is already computed (array updates)."""
        node = self.graph.add_node(op_name, inputs, attrs, [(result.shape, result.dtype)],
                                   meta={"source": user_location(2)})
        return node.output

    def fit_value(self, value: Value, result: Any, out: Any) -> Value:
        """``value`` as stored into ``out``: cast and broadcast as a ufunc's ``out=`` does."""
        if result.shape != out.shape:
            node = self.graph.add_node("broadcast_to", [value], {"shape": tuple(out.shape)},
                                       [(out.shape, result.dtype)])
            value = node.output
        if result.dtype != out.dtype:
            node = self.graph.add_node("cast", [value], {"dtype": out.dtype},
                                       [(out.shape, out.dtype)])
            value = node.output
        return value

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        if self.broken is not None:
            return apply(op, *args, **attrs)
        if op.promotion is not None:
            args = self._promoted(op, args)
        inputs = [self.argument(a) for a in args]
        self._check_attrs(op, attrs)
        result = apply(op, *args, **attrs)
        meta = {"source": user_location(2)}
        if isinstance(result, tuple):
            positions = tuple(i for i, r in enumerate(result) if r is not None)
            node = self.graph.add_node(op.name, inputs, attrs,
                                       [(result[i].shape, result[i].dtype) for i in positions],
                                       layout=positions, meta=meta)
            for i, v in zip(positions, node.outputs):
                self.bind(result[i], v)
            return result
        node_of = result._node
        saved = getattr(node_of, "saved", None) if op.aux else None
        if saved:  # an aux kernel's None (an LSTM's unprojected state) gets no value
            saved = [s for s in saved if s is not None]
        out_types = [(result.shape, result.dtype)]
        if saved:
            out_types += [(s.shape, s.dtype) for s in saved]
        node = self.graph.add_node(op.name, inputs, attrs, out_types,
                                   layout="aux" if op.aux else None, meta=meta)
        self.bind(result, node.outputs[0])
        if saved:
            for s, v in zip(saved, node.outputs[1:]):
                self.bind_array(s, v)
        return result

    def _promoted(self, op: Op, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """The arguments as dispatch will hand them to the kernel: type promotion's casts are
        recorded as ``cast`` nodes (dispatch makes them below this mode, unseen)."""
        arrays = [a.array if isinstance(a, Tensor) else a for a in args]
        promoted = promote(op, args, arrays)
        if promoted is None:
            return args
        new_args = promoted[0]
        for old, new in zip(args, new_args):
            if isinstance(new, Tensor) and new is not old:
                node = self.graph.add_node("cast", [self.value_of(old)], {"dtype": new.dtype},
                                           [(new.shape, new.dtype)])
                self.bind(new, node.output)
        return new_args

    def random(self, draw: Callable[[tuple[int, ...]], Tensor], shape: tuple[int, ...]) -> Tensor:
        if self.broken is None:
            self._fail(TraceError(
                f"random numbers drawn at {describe_location(user_location(2))}: a graph would "
                "replay the same draws at every call; compile with dropout off (p=0 or eval()), "
                "or draw the random tensors outside and pass them in"))
        return draw_random(draw, shape)

    def array_update(self, update: Callable[[Callable[[Any], Any]], None]) -> None:
        if self.broken is not None:
            run_array_update(update)
            return
        region = Region(update)
        region.grad_state = [(t, None if t.grad is None else self.value_of(t.grad))
                             for t, _ in self.grad_watch.values()]
        self.regions.append(region)
        namespaces: dict[Any, RecordingNamespace] = {}

        def namespace_of(device: Any) -> RecordingNamespace:
            ns = namespaces.get(device)
            if ns is None:
                ns = namespaces[device] = RecordingNamespace(self, device.backend.xp, region)
            return ns

        update(namespace_of)

    def on_write(self, tensor: Tensor, value: Any) -> None:
        """An in-place write outside any graph (a batch norm's running statistics under
        ``no_grad``): ``tensor`` holds ``value``'s value from now on, fitted to its shape and
        dtype; the write-back at the end of a call is the graph's mutation of its placeholder."""
        if self.broken is not None:
            return
        if isinstance(value, Tensor):
            source, array = self.value_of(value), value.array
        else:
            array = np.asarray(value)
            if array.dtype.kind not in "biuf":
                self._fail(TraceError(f"an in-place write of {type(value).__name__} cannot be "
                                      "recorded"))
                return
            source = self.graph.add_constant(array)
        if self.binding(tensor) is None:
            self._capture(tensor)  # a placeholder, for the write-back
        self.bind(tensor, self.fit_value(source, array, tensor.array))

    # -- what the tracer cannot record -----------------------------------------------------------
    def on_host_read(self, tensor: Tensor, what: str) -> None:
        if self.broken is not None or self.binding(tensor) is None:
            return  # a tensor made outside the traced computation: a constant
        self._fail(DataDependentError(
            f"{what} reads the value of a traced tensor (shape {tuple(tensor.shape)}) at "
            f"{describe_location(user_location(3))}: Python control flow that depends on "
            "tensor values cannot be captured in one graph; compute it with tensor ops "
            "(where, clamp, ...), or compile with fullgraph=False to run such calls eagerly"))

    def on_function_result(self, function: type, args: tuple[Any, ...], result: Any) -> None:
        """A user-defined Function whose forward read traced inputs and returned a tensor the
        tracer never saw computed on raw arrays: recording it would freeze the example's
        result into the graph, so the trace is refused (a forward written with pullback ops
        is recorded op by op and passes)."""
        if not any(isinstance(a, Tensor) and self._traced(a) for a in args):
            return
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        if any(isinstance(t, Tensor) and self.binding(t) is None for t in outputs):
            self._fail(DataDependentError(
                f"the Function {function.__qualname__} computes its result outside pullback's "
                f"ops (on raw arrays) at {describe_location(user_location(3))}; the compiler "
                "cannot record it: write its forward with pullback ops or register it as an op"))

    def _traced(self, t: Tensor) -> bool:
        """Whether ``t`` holds a value computed from the graph's inputs (not a constant)."""
        b = self.binding(t)
        return b is not None and b.value not in self.graph.constants

    def _fail(self, error: TraceError) -> None:
        if self.fullgraph:
            raise error
        self.broken = str(error)


def _arrays_in(v: Any) -> list[Any]:
    if isinstance(v, np.ndarray):
        return [v]
    if isinstance(v, (tuple, list)):
        return [a for x in v for a in _arrays_in(x)]
    return []


def _state_path(array: Any, owner: Any) -> tuple[Any, Any, str] | None:
    """``(optimizer, parameter, key)`` when ``array`` is an optimizer state's."""
    state = getattr(owner, "state", None)
    if isinstance(state, dict):
        for param, per_param in state.items():
            for key, t in per_param.items():
                if isinstance(t, Tensor) and t.array is array:
                    return owner, param, key
    return None
