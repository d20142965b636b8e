"""Dispatch: run an op's kernel for its inputs' backend and record the graph node.

:func:`apply` is the hot path of the whole framework. With no mode active it is a loop over the
inputs, one dictionary look-up for the kernel, the kernel call and, when a gradient is wanted, one
:class:`~pullback.autograd.node.Node`. Plugins are never consulted here: their kernels and rules
were put in the op table at load time.

Modes (:class:`DispatchMode`) form a per-thread stack. While a mode is active every op goes to its
:meth:`DispatchMode.dispatch`; the mode is popped while its own code runs, so calling
:func:`apply` from inside a mode reaches the modes below it and finally the kernels (PyTorch's
``TorchDispatchMode`` works the same way).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from ._operands import OPERAND_CLASSES, is_operand, operand_type_error
from .graph import Node, inference_tensor_error, next_node_seq
from .errors import DeviceError, PullbackError
from .registry import OPS, Op
from .tensor import INFERENCE_VERSION, Tensor
from .promotion import promote

_GRAD_KINDS = frozenset("fcV")  # float, complex, and ml_dtypes' bfloat16 ("V")
_FLOAT_KINDS = "fcV"  # the kinds a float-valued op keeps


class _ThreadState(threading.local):
    """Per-thread switches read on every op."""

    def __init__(self) -> None:
        self.grad_enabled = True
        self.inference = False
        self.modes: list[DispatchMode] = []


state = _ThreadState()
# How many threads are inside inference_mode (kept by pullback.autograd.grad_mode): apply reads
# this plain global first, since reading the thread-local flag costs more than the rest of an
# output's bookkeeping and is almost always False.
inference_threads = [0]
_new_object = object.__new__  # Tensor.__new__, without the attribute look-up


class DispatchMode:
    """Base class of a dispatch mode (tracing, batching, anomaly detection...).

    Subclasses override :meth:`dispatch` and, when they care about backward, :meth:`on_backward`.
    Use a mode as a context manager, or with :func:`push_mode`/:func:`pop_mode`.

    Attributes:
        records_backward: while a mode with this set is active, a first-order backward runs its
            grad rules on Tensors through :func:`apply` (with the forward's saved values, as
            on raw arrays, and no graph of the backward), so the mode sees every op of the
            backward pass (the compiler's tracer records them).
    """

    records_backward = False

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        """Handle one op. The default passes it on to the modes below (and the kernels)."""
        return apply(op, *args, **attrs)

    def on_backward_start(self, node: Node, grad_in: Any) -> None:
        """Called by the engine before each node's grad rule runs."""

    def on_backward(self, node: Node, grad_in: Any, grads_out: tuple[Any, ...]) -> None:
        """Called by the engine after each node's grad rule ran (grads are raw or Tensors)."""

    def on_function_call(self, function: type, args: tuple[Any, ...]) -> None:
        """Called before a user-defined Function's ``forward`` runs on ``args``. Its forward
        may compute on raw arrays, out of any mode's sight: a mode whose tensors' arrays mean
        something else (vmap's hold every sample) refuses the call here."""

    def on_function_result(self, function: type, args: tuple[Any, ...], result: Any) -> None:
        """Called after a user-defined Function's ``forward`` returned ``result`` (before its
        node is recorded): a mode that records ops (the compiler's tracer) refuses a result
        computed on raw arrays, which it could not see."""

    def on_function_node(self, node: Any) -> None:
        """Called when a user-defined Function records its node (op nodes are seen in
        :meth:`dispatch`, as the output's ``_node``)."""

    def on_host_read(self, tensor: Tensor, what: str) -> None:
        """Called before a Tensor's values are read into Python (``what`` is ``"item()"``,
        ``"bool()"``, ``"tolist()"``, ``"numpy()"``...): a tracer cannot record what Python
        does with them."""

    def on_write(self, tensor: Tensor, value: Any) -> None:
        """Called after an in-place op outside any graph (``add_`` under ``no_grad``,
        ``copy_``, ``fill_``: a batch norm's running statistics) overwrote all of ``tensor``'s
        array with ``value`` (a Tensor the mode saw computed, or a Python number or array),
        broadcast and cast to the tensor's shape and dtype: a tracer records the write."""

    def array_update(self, update: Callable[[Callable[[Any], Any]], None]) -> None:
        """Run code that updates backend arrays in place outside any graph (an optimizer's
        step): see :func:`run_array_update`. The default passes it to the modes below."""
        run_array_update(update)

    def random(self, draw: Callable[[tuple[int, ...]], Tensor], shape: tuple[int, ...]) -> Tensor:
        """Make a tensor of random numbers of ``shape`` with ``draw(shape)`` (see
        :func:`draw_random`): vmap draws one sample per batch element, or refuses. The default
        passes it to the modes below."""
        return draw_random(draw, shape)

    def __enter__(self) -> DispatchMode:
        push_mode(self)
        return self

    def __exit__(self, *exc: object) -> None:
        pop_mode(self)


def push_mode(mode: DispatchMode) -> None:
    """Make ``mode`` the innermost active mode of this thread."""
    state.modes.append(mode)


def pop_mode(mode: DispatchMode | None = None) -> DispatchMode:
    """Remove the innermost mode (which must be ``mode`` when given) and return it."""
    if not state.modes:
        raise RuntimeError("pop_mode: no dispatch mode is active")
    if mode is not None and state.modes[-1] is not mode:
        raise RuntimeError(f"pop_mode: {mode!r} is not the innermost mode ({state.modes[-1]!r})")
    return state.modes.pop()


def active_modes() -> tuple[DispatchMode, ...]:
    """The active modes of this thread, outermost first."""
    return tuple(state.modes)


def run_array_update(update: Callable[[Callable[[Any], Any]], None]) -> None:
    """Run ``update(namespace_of)``, code that writes backend arrays in place outside any graph
    (an optimizer's step), where ``namespace_of(device)`` is the array namespace to compute with.

    Without a mode it is the device's backend namespace (NumPy, CuPy). The innermost active mode
    may lend another one (:meth:`DispatchMode.array_update`): the compiler's tracer records the
    update's operations, then re-runs its Python alone at each call of the compiled step, so
    that its Python state (step counts, learning rates) advances as in eager mode.
    """
    st = state
    if st.modes:
        mode = st.modes.pop()
        try:
            mode.array_update(update)
        finally:
            st.modes.append(mode)
        return
    update(_backend_namespace)


def draw_random(draw: Callable[[tuple[int, ...]], Tensor], shape: tuple[int, ...]) -> Tensor:
    """``draw(shape)``, a tensor of fresh random numbers (``pullback.rand`` and friends), seen
    first by the innermost active mode (:meth:`DispatchMode.random`): random draws are not ops,
    yet a batching mode must decide whether each batch element gets its own numbers."""
    st = state
    if st.modes:
        mode = st.modes.pop()
        try:
            return mode.random(draw, shape)
        finally:
            st.modes.append(mode)
    return draw(shape)


def _backend_namespace(device: Any) -> Any:
    return device.backend.xp


def notify_host_read(tensor: Tensor, what: str) -> None:
    """Tell the active modes that ``tensor``'s values are about to be read into Python."""
    for mode in tuple(state.modes):
        mode.on_host_read(tensor, what)


def notify_write(tensor: Tensor, value: Any) -> None:
    """Tell the active modes that ``tensor`` was overwritten in place with ``value`` (see
    :meth:`DispatchMode.on_write`)."""
    for mode in tuple(state.modes):
        mode.on_write(tensor, value)


def apply(op: Op, *args: Any, **attrs: Any) -> Tensor:
    """Run ``op`` on ``args`` (Tensors and Python scalars) with keyword attributes ``attrs``.

    The device is that of the first Tensor argument; every Tensor argument must be on it.

    Raises:
        ArgumentTypeError: for an argument that is none of a Tensor, a Python number, a NumPy
            array or scalar, another library's array, or None (see :mod:`pullback._operands`).
    """
    st = state
    if st.modes:
        mode = st.modes.pop()
        try:
            return mode.dispatch(op, args, attrs)
        finally:
            st.modes.append(mode)

    device = dtype = None
    requires_grad = mixed = float_number = False
    arrays = []
    for a in args:
        if isinstance(a, Tensor):
            arr = a.array
            if device is None:
                device = a.device
                dtype = arr.dtype
            elif a.device is not device:
                raise _device_mismatch(op, args)
            elif arr.dtype is not dtype:
                mixed = True
            arrays.append(arr)
            if a._requires_grad:
                requires_grad = True
        else:
            cls = a.__class__
            if cls is float:
                float_number = True
            elif cls not in OPERAND_CLASSES and a is not None and not is_operand(a):
                raise operand_type_error(op.name, len(arrays), a)
            arrays.append(a)
    if device is None:
        from .tensor import default_device

        device = default_device()
    # Type promotion (see pullback.promotion): consulted only when a dtype could change.
    rule = op.promotion
    if rule is not None and (mixed or ((float_number or rule.to_float) and dtype is not None
                                       and dtype.kind not in _FLOAT_KINDS)):
        promoted = promote(op, args, arrays)
        if promoted is not None:
            args, arrays = promoted

    try:
        kernel = op.kernels[device.type]
    except KeyError:  # not resolved yet for this backend (a subscript is the cheaper look-up)
        kernel = op.kernel_for(device.type)
    try:
        out = kernel(*arrays, **attrs)
    except PullbackError:
        raise
    except OverflowError:
        # A Python int outside an integer tensor's range (int8 + 1000): PyTorch wraps it.
        promoted = promote(op, args, arrays) if rule is not None else None
        if promoted is None:
            raise
        return apply(op, *promoted[0], **attrs)
    except Exception as exc:
        from ._kernel_errors import kernel_error

        raise kernel_error(op, args, attrs, exc) from exc
    saved = None
    if op.aux:
        out, saved = out
    if out.__class__ is not device.array_type:
        if out.__class__ is tuple:  # several outputs (first-order backward ops): no graph node
            return _wrap_outputs(out, device)  # type: ignore[return-value]
        out = device.backend.asarray(out, index=device.index or 0)

    t = _new_object(Tensor)
    t.array = out
    t.device = device
    t.grad = None
    t._hooks = None
    if op.view and not (op.may_copy and not _shares_memory(device, out, args[0].array)):
        base = args[0]
        counter = base._version
        if len(counter) == 1:
            counter.append(True)  # marks "has views": recorded in-place ops are then refused
        t._version = counter
        t._base = base._base if base._base is not None else base
    else:
        t._version = [0]
        t._base = None
    if (
        requires_grad
        and st.grad_enabled
        and op.differentiable
        and out.dtype.kind in _GRAD_KINDS
    ):
        # The graph node, its slots filled here (see Node): inputs whose values the rule reads
        # have their version counters checked at backward time (check_saved_versions).
        node = _new_object(Node)
        node.op = op
        # A tuple of arrays and numbers is untracked by the cyclic collector at its first look
        # (a list would stay tracked until the backward); no input Tensor is kept (Node.arrays).
        node.arrays = tuple(arrays)
        node.attrs = attrs
        node.out_data = out if op.save_output else None
        node.saved = saved
        node.device = device
        node.extra = None
        node.seq = next_node_seq()
        edges: list[Any] = []
        save_inputs = op.save_inputs
        versions: tuple[Any, ...] | None = () if save_inputs else None
        constant = False
        for a in args:
            if isinstance(a, Tensor):
                if save_inputs:
                    version = a._version
                    if version is INFERENCE_VERSION:
                        raise inference_tensor_error(op)
                    versions += (version, version[0])  # type: ignore[operator]
                if a._requires_grad:
                    edges.append(a._node or a)
                    continue
                constant = True
            edges.append(None)
        node.edges = edges
        node.versions = versions
        node.constants = _constants(args) if constant else None
        t._node = node
        t._requires_grad = True
    else:
        t._node = None
        t._requires_grad = False
        if inference_threads[0] and st.inference:
            t._version = INFERENCE_VERSION
    return t


def _constants(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``Node.constants``: each Tensor argument that needs no gradient, ``None`` elsewhere."""
    return tuple(a if isinstance(a, Tensor) and not a._requires_grad else None for a in args)


def _wrap_outputs(outs: tuple[Any, ...], device: Any) -> tuple[Tensor | None, ...]:
    """The outputs of a multi-output kernel as Tensors outside the graph (``None`` kept)."""
    index = device.index or 0
    return tuple(None if o is None else Tensor._wrap(
        o if o.__class__ is device.array_type else device.backend.asarray(o, index=index), device)
        for o in outs)


def _shares_memory(device: Any, out: Any, data: Any) -> bool:
    """Whether ``out`` may share memory with ``data`` (a bounds check: O(1), never a false no)."""
    return bool(device.backend.xp.may_share_memory(out, data))


def _device_mismatch(op: Op, args: tuple[Any, ...]) -> DeviceError:
    devices = [str(a.device) for a in args if isinstance(a, Tensor)]
    shapes = [tuple(a.shape) for a in args if isinstance(a, Tensor)]
    return DeviceError(
        f"{op.name}: expected all tensors on one device, got {', '.join(devices)} "
        f"(shapes {', '.join(map(str, shapes))}); move them with .to(device)"
    )


class RawNamespace:
    """Op namespace over raw arrays of one backend, used by first-order backward.

    ``F.exp(a)`` calls the ``exp`` kernel of the backend directly: no Tensor, no graph.
    """

    differentiable = False

    def __init__(self, backend_name: str) -> None:
        self._backend = backend_name

    def full(self, shape: tuple[int, ...], value: float, like: Any) -> Any:
        """A constant array with ``like``'s dtype (rules need ones/zeros now and then)."""
        from .backends import get_backend

        backend = get_backend(self._backend)
        with backend.device_scope(backend.index_of(like)):  # like's GPU, not the current one
            return backend.xp.full(shape, value, dtype=like.dtype)

    def eye(self, n: int, like: Any) -> Any:
        """An identity matrix with ``like``'s dtype."""
        from .backends import get_backend

        backend = get_backend(self._backend)
        with backend.device_scope(backend.index_of(like)):
            return backend.xp.eye(n, dtype=like.dtype)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        op = OPS.get(name)
        if op is None:
            raise AttributeError(f"no op named '{name}' (in a grad rule's F namespace)")
        kernel = op.kernel_for(self._backend)
        if op.aux:
            full = kernel

            def kernel(*a: Any, **k: Any) -> Any:
                return full(*a, **k)[0]

        setattr(self, name, kernel)
        return kernel


class TensorNamespace:
    """Op namespace over Tensors, used by backward under ``create_graph=True``."""

    differentiable = True

    def full(self, shape: tuple[int, ...], value: float, like: Any) -> Any:
        """A constant Tensor with ``like``'s dtype and device."""
        from .creation import full

        return full(shape, value, dtype=like.dtype, device=like.device)

    def eye(self, n: int, like: Any) -> Any:
        """An identity matrix with ``like``'s dtype and device."""
        from .creation import eye

        return eye(n, dtype=like.dtype, device=like.device)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        op = OPS.get(name)
        if op is None:
            raise AttributeError(f"no op named '{name}' (in a grad rule's F namespace)")

        def call(*args: Any, **attrs: Any) -> Any:
            return apply(op, *args, **attrs)

        call.__name__ = name
        setattr(self, name, call)
        return call


class FirstOrderTensorNamespace(TensorNamespace):
    """Op namespace over Tensors with first-order semantics (``differentiable`` is False: rules
    take their fast paths, using the forward's saved values). The engine uses it for a
    first-order backward while a mode that :attr:`~DispatchMode.records_backward` is active."""

    differentiable = False


_raw_namespaces: dict[str, RawNamespace] = {}
tensor_namespace = TensorNamespace()
first_order_tensor_namespace = FirstOrderTensorNamespace()


def raw_namespace(backend_name: str) -> RawNamespace:
    """The (cached) raw namespace of a backend."""
    ns = _raw_namespaces.get(backend_name)
    if ns is None:
        ns = _raw_namespaces[backend_name] = RawNamespace(backend_name)
    return ns
