"""User-defined differentiable functions (PyTorch's ``torch.autograd.Function``).

Example::

    class Exp(pullback.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

``forward`` runs without recording a graph; ``backward`` returns one gradient (or ``None``) per
argument of ``forward``. Under ``create_graph=True`` ``backward`` runs with grad enabled, so a
backward written with Tensor ops is itself differentiable.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ..dispatch import state
from ..dtypes import is_floating
from ..errors import AutogradError
from ..tensor import INFERENCE_VERSION, Tensor
from ..graph import OutputSlot, check_saved_versions, next_node_seq


class FunctionCtx:
    """The ``ctx`` object passed to ``forward`` and ``backward``.

    Attributes set on it in ``forward`` are available in ``backward``.
    """

    def __init__(self, needs_input_grad: tuple[bool, ...]) -> None:
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved: tuple[Any, ...] = ()
        self._non_differentiable: set[int] = set()
        # weak reference to the FunctionNode (no cycle node -> ctx -> node)
        self._node: weakref.ref[FunctionNode] | None = None

    if TYPE_CHECKING:
        # Users keep arbitrary state on ctx (``ctx.scale = s``); tell mypy so. Type checking
        # only: at run time a missing attribute is a plain AttributeError.
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Keep tensors for ``backward`` (read them back with :attr:`saved_tensors`).

        Modifying a saved tensor in place before backward raises an error at backward time.
        """
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward takes Tensors or None, got {type(t).__name__}")
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors given to :meth:`save_for_backward`."""
        node = self._node() if self._node is not None else None
        if node is not None and node.args is None:
            raise AutogradError(
                f"saved tensors of {node.name} were freed by a previous backward; "
                "pass retain_graph=True to keep them"
            )
        out = []
        for item in self._saved:
            if isinstance(item, _SavedOutput):
                out.append(item.unpack(node))
            else:
                out.append(item)
        return tuple(out)

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Declare outputs that carry no gradient (indices, masks...)."""
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """With ``False``, ``backward`` receives ``None`` (not zeros) for unused outputs."""
        self.materialize_grads = bool(value)


class _SavedOutput:
    """A saved tensor that is also an output: kept as data + output index, so that the node does
    not reference its own output Tensor (no reference cycle)."""

    __slots__ = ("array", "device", "index")

    def __init__(self, t: Tensor, index: int) -> None:
        self.array, self.device, self.index = t.array, t.device, index

    def unpack(self, node: FunctionNode | None) -> Tensor:
        t = Tensor._wrap(self.array, self.device)
        t._node, t._requires_grad = OutputSlot(node, self.index), True
        return t


class FunctionNode:
    """Graph node of a :class:`Function` application (one slot per output)."""

    __slots__ = (
        "fn", "ctx", "args", "edges", "device", "n_outputs", "out_meta", "versions", "meta",
        "output_hooks", "output_retained", "seq", "__weakref__",
    )
    fn: type[Function]
    ctx: FunctionCtx | None  # None (like args and edges) once backward released the node
    args: tuple[Any, ...] | None
    edges: list[Any] | None
    device: Any
    n_outputs: int
    out_meta: list[tuple[tuple[int, ...], Any, Any] | None]
    versions: tuple[Any, ...] | None  # flat (counter, value, ...), as Node.versions
    meta: Any
    output_hooks: dict[int, Any]
    output_retained: dict[int, Any]
    seq: int  # creation order, as Node.seq

    def __init__(self, fn: type[Function], ctx: FunctionCtx, args: tuple[Any, ...],
                 outs: tuple[Any, ...], device: Any) -> None:
        self.fn = fn
        self.ctx = ctx
        self.args = args
        self.device = device
        self.n_outputs = len(outs)
        self.output_hooks = {}
        self.output_retained = {}
        self.out_meta = [(o.shape, o.dtype, o.device) if isinstance(o, Tensor) else None
                         for o in outs]
        self.edges = [
            ((a._node or a) if a._requires_grad else None) if isinstance(a, Tensor) else None
            for a in args
        ]
        self.versions = None
        self.meta = None
        self.seq = next_node_seq()

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def op(self) -> Any:
        """Functions have no registry op; debuggers show :attr:`name`."""
        return None

    def release(self) -> None:
        self.args = None
        self.edges = None
        self.ctx = None

    def run_backward(self, grads: list[Any], create_graph: bool,
                     needs: tuple[bool, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """Call the user's ``backward``; returns the input gradients and the inputs."""
        from ..creation import zeros

        if self.versions:
            check_saved_versions(self)
        ctx, args = self.ctx, self.args
        assert ctx is not None and args is not None, "the engine runs only unreleased nodes"
        wrapped = []
        for g, meta in zip(grads, self.out_meta):
            if g is None:
                if ctx.materialize_grads and meta is not None:
                    g = zeros(meta[0], dtype=meta[1], device=meta[2])
            elif not isinstance(g, Tensor):
                g = Tensor._wrap(g, self.device)
            wrapped.append(g)
        result = self.fn.backward(ctx, *wrapped)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != len(args):
            raise AutogradError(
                f"{self.name}.backward returned {len(result)} gradients, but forward took "
                f"{len(args)} arguments (return None for those without a gradient)"
            )
        out: list[Any] = []
        for i, (r, a) in enumerate(zip(result, args)):
            if r is None or not needs[i]:
                out.append(None)
                continue
            if not isinstance(r, Tensor):
                raise AutogradError(f"{self.name}.backward returned {type(r).__name__} for input {i}")
            if tuple(r.shape) != tuple(a.shape):
                raise AutogradError(
                    f"{self.name}.backward returned a gradient of shape {tuple(r.shape)} for "
                    f"input {i} of shape {tuple(a.shape)}"
                )
            out.append(r if create_graph else r.array)
        return tuple(out), args


class Function:
    """Base class of user-defined differentiable operations (see the module docstring).

    Attributes:
        generate_vmap_rule: set it to True when ``forward`` computes only with pullback ops
            (never with ``.array`` or NumPy), so that ``pullback.func.vmap`` may run it on
            batched tensors op by op, as torch.func's attribute of that name; otherwise vmap
            refuses the Function rather than let it read every sample's values at once.
    """

    generate_vmap_rule: bool = False

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """Compute the outputs from the inputs (no graph is recorded here)."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        """Given d(loss)/d(outputs), return d(loss)/d(inputs): one per ``forward`` argument."""
        raise NotImplementedError

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Run ``forward`` and record one graph node for the result."""
        for mode in state.modes:
            mode.on_function_call(cls, args)
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record = state.grad_enabled and any(needs)
        ctx = FunctionCtx(needs)
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            result = cls.forward(ctx, *args, **kwargs)
        finally:
            state.grad_enabled = prev
        for mode in state.modes:
            mode.on_function_result(cls, args, result)
        if not record:
            return result
        single = isinstance(result, Tensor)
        outs = (result,) if single else tuple(result)
        device = next(a.device for a in args if isinstance(a, Tensor))
        node = FunctionNode(cls, ctx, args, outs, device)
        ctx._node = weakref.ref(node)
        for mode in state.modes:
            mode.on_function_node(node)
        new_outs = []
        for i, o in enumerate(outs):
            if not isinstance(o, Tensor) or id(o) in ctx._non_differentiable or not is_floating(o.dtype):
                new_outs.append(o)
                continue
            if any(o is a for a in args):  # an input returned as is: give it its own identity
                alias = Tensor._wrap(o.array, o.device)
                alias._version = o._version
                o = alias
            o._node, o._requires_grad = OutputSlot(node, i), True
            new_outs.append(o)
        saved = []
        versions = []
        for t in ctx._saved:
            index = next((i for i, o in enumerate(outs) if t is o), None)
            if index is not None and isinstance(new_outs[index]._node, OutputSlot):
                saved.append(_SavedOutput(new_outs[index], index))
                continue
            if t is not None:
                if t._version is INFERENCE_VERSION:
                    raise AutogradError(f"{cls.__name__}: inference tensors cannot be saved for backward")
                versions += (t._version, t._version[0])
            saved.append(t)
        ctx._saved = tuple(saved)
        node.versions = tuple(versions)
        if single:
            return new_outs[0]
        return tuple(new_outs) if isinstance(result, tuple) else new_outs


def once_differentiable(fn: Any) -> Any:
    """Mark a ``backward`` that is not itself differentiable (it runs under no_grad)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            return fn(ctx, *grads)
        finally:
            state.grad_enabled = prev

    return wrapper
