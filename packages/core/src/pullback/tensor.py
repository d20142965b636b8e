"""The Tensor: one backend array, its device, and its place in the autograd graph.

Methods are thin: each calls a function of :mod:`pullback._ops` (so that ``x.exp()`` and
``pullback.exp(x)`` are one thing). Operators call :func:`~pullback.dispatch.apply` directly.
"""

from __future__ import annotations

import builtins
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from ._tensor_device import DeviceQueries
from .dtypes import get_default_dtype, is_floating, to_dtype
from .errors import AutogradError, DTypeError, ShapeError

if TYPE_CHECKING:
    from .backends import Device
    from .graph import Node, OutputSlot

_default_device: Any = None

# The shared version counter of tensors made under inference_mode (they may not be saved for
# backward; see Node).
INFERENCE_VERSION = [0]


def default_device() -> Any:
    """The CPU device (where tensors go unless told otherwise)."""
    global _default_device
    if _default_device is None:
        from .backends import Device

        _default_device = Device("cpu")
    return _default_device


class Tensor(DeviceQueries):
    """An N-d array on a device that can take part in reverse-mode autodiff.

    Create tensors with :func:`pullback.tensor` and friends; ``Tensor(data)`` works too.

    Attributes:
        array: the backend array (a NumPy ``ndarray`` on the CPU, a CuPy array on CUDA).
        data: as in PyTorch, a detached Tensor aliasing the same memory (assignable).
        device: the :class:`~pullback.Device`.
        grad: the accumulated gradient (a Tensor) after ``backward()``, for leaves.
    """

    __slots__ = (
        "array", "device", "grad", "_requires_grad", "_node", "_version", "_base", "_hooks",
        "__weakref__",
    )
    __array_priority__ = 1000  # NumPy defers to our reflected operators (ndarray * Tensor)

    array: Any
    device: Device
    grad: Tensor | None
    _requires_grad: builtins.bool
    _node: Node | OutputSlot | None  # a Function's outputs get an OutputSlot of its node
    _version: list[Any]  # [count] or [count, True] once views share it
    _base: Tensor | None
    _hooks: list[Callable[[Tensor], Tensor | None]] | None

    def __init__(self, *data: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> None:
        """PyTorch's legacy constructor: ``Tensor(3, 4)`` is a zero-filled tensor of shape
        (3, 4) (PyTorch leaves its memory uninitialized), ``Tensor([1, 2])`` converts its data
        to the default float dtype (float32) unless ``dtype`` is given, ``Tensor()`` is empty;
        ``Tensor(tensor)`` keeps the tensor's dtype. :func:`pullback.tensor` infers the dtype
        from the data instead."""
        from ._legacy_tensors import legacy_tensor

        if dtype is None:
            only = data[0] if len(data) == 1 else None
            dtype = only.dtype if isinstance(only, Tensor) else get_default_dtype()
        made = legacy_tensor("Tensor", data, dtype, device)
        self._init_leaf(made.array, made.device, requires_grad)

    def _init_leaf(self, data: Any, device: Device, requires_grad: bool) -> None:
        """Fill the slots of a new leaf around the backend array ``data`` (for ``__init__`` of
        Tensor and of subclasses such as ``pullback.nn.Parameter``)."""
        self.array = data
        self.device = device
        self.grad = None
        self._node = None
        self._version = [0]
        self._base = None
        self._hooks = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    @staticmethod
    def _wrap(data: Any, device: Any = None) -> Tensor:
        """A leaf Tensor around an existing backend array (no copy, no checks)."""
        t = Tensor.__new__(Tensor)
        t.array = data
        t.device = device if device is not None else default_device()
        t.grad = None
        t._node = None
        t._version = [0]
        t._base = None
        t._hooks = None
        t._requires_grad = False
        return t

    # -- PyTorch's .data -------------------------------------------------------------------------
    @property
    def data(self) -> Tensor:
        """A Tensor sharing this tensor's memory, outside the graph, as PyTorch's ``.data``.

        Unlike :meth:`detach` it has a version counter of its own, so in-place changes made
        through it (``p.data.add_(u)``, an optimizer's update) are not seen by autograd: that is
        the point of ``.data``, and its danger. The backend array itself is ``.array``.
        """
        return Tensor._wrap(self.array, self.device)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(
                f"Tensor.data must be set to a Tensor, got {type(value).__name__} "
                "(to set the backend array itself, assign .array)"
            )
        # As in PyTorch, the new data may have another shape, dtype or device (``p.data =
        # p.data.to(device)`` moves a parameter and keeps its identity).
        self.array, self.device = value.array, value.device

    # -- metadata ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, as a tuple."""
        return self.array.shape

    def size(self, axis: int | None = None, *, dim: int | None = None) -> Any:
        """The shape (PyTorch's ``size()``), or the size of one axis (``size(dim)``)."""
        axis = axis if dim is None else dim
        if axis is None:
            return self.array.shape
        from ._ops._axes import normalize_axes

        return self.array.shape[normalize_axes(axis, self.array.ndim, "size")[0]]

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return self.array.ndim

    def dim(self) -> int:
        """Number of dimensions (PyTorch's spelling)."""
        return self.array.ndim

    @property
    def dtype(self) -> np.dtype:
        """The element dtype (a NumPy dtype object)."""
        return self.array.dtype

    def numel(self) -> int:
        """Number of elements."""
        return int(self.array.size)

    def element_size(self) -> int:
        """Bytes per element."""
        return int(self.array.dtype.itemsize)

    @property
    def nbytes(self) -> int:
        """Bytes held by the elements."""
        return int(self.array.nbytes)

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a recorded op (their ``.grad`` is filled)."""
        return self._node is None

    @property
    def grad_fn(self) -> Any:
        """The graph node that produced this tensor (``None`` for leaves)."""
        return self._node

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to (or through) this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if value and not is_floating(self.array.dtype) and self.array.dtype.kind != "c":
            raise DTypeError(
                f"only floating point tensors can require gradients, got dtype {self.array.dtype}"
            )
        if not value and self._node is not None:
            raise AutogradError(
                "requires_grad can only be turned off on leaf tensors; use detach() instead"
            )
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return self."""
        self.requires_grad = requires_grad
        return self

    @property
    def T(self) -> Tensor:  # noqa: N802 - NumPy/PyTorch name
        """All axes reversed (PyTorch warns for other than 2 axes, and so does pullback)."""
        if self.ndim != 2:
            import warnings

            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their "
                          "shape is deprecated and it will throw an error in a future release. "
                          "Consider `x.mT` to transpose batches of matrices or `x.permute(*range("
                          "x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                          UserWarning, stacklevel=2)
        return _ops.permute(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self) -> Tensor:  # noqa: N802
        """The last two axes swapped (batched matrix transpose)."""
        return _ops.matrix_transpose(self)

    # -- autograd --------------------------------------------------------------------------------
    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate d(self)/d(leaf) into the ``.grad`` of every leaf that requires grad.

        Args:
            gradient: d(loss)/d(self); required unless self has one element.
            retain_graph: keep the graph for another backward (defaults to ``create_graph``).
            create_graph: build a graph of the backward pass (for higher-order derivatives).
            inputs: only accumulate into these leaves.
        """
        from .autograd.engine import run_backward

        if inputs is not None and isinstance(inputs, Tensor):
            inputs = [inputs]
        run_backward([self], [gradient], retain_graph=create_graph if retain_graph is None
                     else retain_graph, create_graph=create_graph, inputs=inputs)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> Any:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor
        replaces the gradient. Returns a handle with ``remove()``."""
        if not self._requires_grad:
            raise AutogradError("cannot register a hook on a tensor that doesn't require grad")
        owner: Any = self if self._node is None else self._node
        if owner is self:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            if owner.hooks is None:
                owner.hooks = []
            hooks = owner.hooks
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> Any:
        """Call ``hook(self)`` once this leaf's ``.grad`` holds the whole gradient of a
        ``backward()``, as soon as the engine has it (before the rest of the graph is done),
        as PyTorch's hook of this name: a data-parallel wrapper sends gradients from it while
        backward goes on. Returns a handle with ``remove()``."""
        if self._node is not None:
            raise AutogradError("post-accumulate-grad hooks can only be registered on leaf "
                                "tensors")
        if not self._requires_grad:
            raise AutogradError("cannot register a hook on a tensor that doesn't require grad")
        from .autograd.engine import post_accumulate_hooks

        post_accumulate_hooks(self, create=True).append(hook)
        return _PostAccumulateHandle(self, hook)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor after backward (leaves always keep it)."""
        if not self._requires_grad:
            raise AutogradError("can't retain_grad on a tensor that doesn't require grad")
        if self._node is not None:
            self._node.retained = weakref.ref(self)

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's data (and version counter), outside the graph."""
        t = Tensor._wrap(self.array, self.device)
        t._version = self._version
        return t

    def detach_(self) -> Tensor:
        """Cut this tensor from its graph, in place."""
        self._node = None
        self._requires_grad = False
        return self

    # -- conversion ------------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (shared memory on the CPU)."""
        if _dispatch_state.modes:
            notify_host_read(self, "numpy()")
        if self._requires_grad:
            raise AutogradError(
                "can't call numpy() on a tensor that requires grad; use tensor.detach().numpy()"
            )
        return self.device.backend.to_host(self.array)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        if _dispatch_state.modes:
            notify_host_read(self, "__array__() (numpy.asarray)")
        arr = self.device.backend.to_host(self.array)
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        return arr.copy() if copy else arr

    def item(self) -> Any:
        """The single element as a Python number."""
        return self._scalar("item()")

    def _scalar(self, what: str) -> Any:
        """The single element as a Python number, read by ``what`` (for the modes' sake)."""
        if _dispatch_state.modes:
            notify_host_read(self, what)
        if self.array.size != 1:  # PyTorch's RuntimeError (float()/int()'s ValueError too)
            raise ShapeError(
                f"{what}: a tensor with {self.array.size} elements cannot be converted to a "
                "scalar"
            )
        return self.device.backend.to_host(self.array).reshape(()).item()

    def tolist(self) -> Any:
        """Nested Python lists of the elements."""
        if _dispatch_state.modes:
            notify_host_read(self, "tolist()")
        return self.device.backend.to_host(self.array).tolist()

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.array.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.array.__dlpack_device__()

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``."""
        return _ops.to(self, *args, **kwargs)

    def float(self) -> Tensor:
        """Cast to float32."""
        return self.to(np.float32)

    def double(self) -> Tensor:
        """Cast to float64."""
        return self.to(np.float64)

    def half(self) -> Tensor:
        """Cast to float16."""
        return self.to(np.float16)

    def long(self) -> Tensor:
        """Cast to int64."""
        return self.to(np.int64)

    def int(self) -> Tensor:
        """Cast to int32."""
        return self.to(np.int32)

    def bool(self) -> Tensor:
        """Cast to bool."""
        return self.to(np.bool_)

    def type(self, dtype: Any) -> Tensor:
        """Cast to ``dtype``."""
        return self.to(to_dtype(dtype))

    def cpu(self) -> Tensor:
        """Move to the CPU."""
        return self.to("cpu")

    def cuda(self, index: builtins.int = 0) -> Tensor:
        """Move to ``cuda:index`` (needs pullback-cuda)."""
        return self.to(f"cuda:{index}")

    def clone(self) -> Tensor:
        """A copy that stays in the graph (its gradient flows back to self)."""
        return _ops.clone(self)

    def contiguous(self) -> Tensor:
        """A C-contiguous tensor with the same values (self when already contiguous)."""
        return _ops.contiguous(self)

    # -- Python protocol -------------------------------------------------------------------------
    def __repr__(self) -> str:
        body = np.array2string(self.device.backend.to_host(self.array), separator=", ",
                               precision=4, threshold=200, prefix="tensor(")
        extra = []
        if self.device.type != "cpu":
            extra.append(f"device='{self.device}'")
        if self.array.dtype != np.float32 and self.array.dtype != np.int64 and self.array.dtype != np.bool_:
            extra.append(f"dtype={self.array.dtype}")
        if self._node is not None:
            extra.append(f"grad_fn=<{self._node.name}>")
        elif self._requires_grad:
            extra.append("requires_grad=True")
        return "tensor(" + body + "".join(", " + e for e in extra) + ")"

    def __len__(self) -> builtins.int:
        if self.array.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self.array.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_ops.unbind(self, 0))

    def __bool__(self) -> builtins.bool:
        if self.array.size != 1:  # PyTorch's RuntimeError (and NumPy's ValueError)
            raise ShapeError(
                f"the truth value of a tensor with {self.array.size} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self._scalar("bool()"))

    def __float__(self) -> builtins.float:
        return float(self._scalar("float()"))

    def __int__(self) -> builtins.int:
        return int(self._scalar("int()"))

    def __index__(self) -> builtins.int:
        if self.array.dtype.kind not in "iu" or self.array.size != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self._scalar("__index__()"))

    __hash__ = object.__hash__

    def __reduce_ex__(self, protocol: Any) -> Any:
        from .multiprocessing import _reductions

        if _reductions.spawning():  # an argument of a process being started: shared memory
            return _reductions.reduce_tensor(self)
        raise TypeError("pullback tensors are not pickled; save them with pullback.save (or "
                        "send them to other processes with pullback.multiprocessing)")

    def to_sparse(self, *args: Any, **kwargs: Any) -> Tensor:
        """PyTorch's sparse COO layout, computed densely: a differentiable copy of the same
        values (see :mod:`pullback._sparse`)."""
        from ._sparse import to_sparse

        return to_sparse(self, *args, **kwargs)

    def to_dense(self, *args: Any, **kwargs: Any) -> Tensor:
        """The tensor itself: pullback's tensors are dense (see :mod:`pullback._sparse`)."""
        return self

    @property
    def is_sparse(self) -> builtins.bool:
        """False: pullback stores every tensor dense, ``to_sparse()`` ones included."""
        return False

    def share_memory_(self) -> Tensor:
        """Move this tensor's memory into shared memory, as PyTorch: processes started
        afterwards (``fork`` or ``spawn``), and tensors sent through ``Queue``, then see and
        make the same changes. A no-op if it is shared already, and on non-CPU devices.

        Tensors made as views of this one before the call keep the old memory (PyTorch moves
        the whole storage; a pullback tensor owns its array).

        Example:
            >>> import pullback
            >>> t = pullback.zeros(3).share_memory_()
            >>> t.is_shared()
            True
        """
        if self.device.type == "cpu":
            from .multiprocessing import _reductions, _shared_memory

            self.array = _shared_memory.share_array(self.array)
            _reductions.register(type(self))
        return self

    def is_shared(self) -> builtins.bool:
        """Whether this tensor is in shared memory (always True off the CPU, as PyTorch says
        of CUDA tensors)."""
        if self.device.type != "cpu":
            return True
        from .multiprocessing._shared_memory import mapping_of

        return mapping_of(self.array) is not None

    def __format__(self, spec: str) -> str:
        """``f"{loss:.4f}"``: a 0-d tensor formats as its Python number, as in PyTorch; other
        tensors take only the empty spec (their ``str``)."""
        if self.array.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo: dict[builtins.int, Any]) -> Tensor:
        """``copy.deepcopy``: a new leaf with a copy of the memory, ``requires_grad`` and
        ``.grad``, of the same class (Parameters stay Parameters); a tensor reached twice through
        ``memo`` is copied once, so tied weights stay tied in a copied model.

        Raises:
            AutogradError: for a non-leaf tensor, as PyTorch (a copy cannot carry its graph);
                copy ``tensor.detach()`` instead.
        """
        done = memo.get(id(self))
        if done is not None:
            return done
        if self._node is not None:
            raise AutogradError("copy.deepcopy: only leaf tensors can be deep-copied (this one is "
                                "the output of an op); copy tensor.detach() instead")
        cls = type(self)
        new = cls.__new__(cls)
        new._init_leaf(self.array.copy(), self.device, self._requires_grad)
        memo[id(self)] = new
        if self.grad is not None:
            new.grad = self.grad.__deepcopy__(memo)
        return new

    def __getitem__(self, key: Any) -> Tensor:
        return _ops.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _ops.setitem(self, key, value)

    # -- operators ---------------------------------------------------------------------------
    # The arithmetic, shift and comparison operators (``__add__``, ``__radd__``, ``__lt__``...)
    # are made by _binary_operator() below the class: each goes straight to dispatch (the hot
    # path) and returns NotImplemented for an operand that is no Tensor, number or array, so
    # that the other object's reflected operator runs, as in PyTorch.
    def __matmul__(self, other: Any) -> Tensor:
        if not _is_operand(other):
            return NotImplemented
        return _ops.matmul(self, other)

    def __rmatmul__(self, other: Any) -> Tensor:
        if not _is_operand(other):
            return NotImplemented
        return _ops.matmul(_ops.as_tensor(other, device=self.device), self)

    def __neg__(self) -> Tensor:
        return apply(_E.NEG, self)

    def __pos__(self) -> Tensor:
        return self

    def __abs__(self) -> Tensor:
        return apply(_E.ABS, self)

    def __and__(self, other: Any) -> Tensor:
        if not _is_operand(other):
            return NotImplemented
        return apply(_E.LOGICAL_AND if _both_bool(self, other) else _B.BITWISE_AND, self, other)

    def __or__(self, other: Any) -> Tensor:
        if not _is_operand(other):
            return NotImplemented
        return apply(_E.LOGICAL_OR if _both_bool(self, other) else _B.BITWISE_OR, self, other)

    def __xor__(self, other: Any) -> Tensor:
        if not _is_operand(other):
            return NotImplemented
        return apply(_E.LOGICAL_XOR if _both_bool(self, other) else _B.BITWISE_XOR, self, other)

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    def __invert__(self) -> Tensor:
        return apply(_E.LOGICAL_NOT if self.dtype.kind == "b" else _B.BITWISE_NOT, self)

    # -- in-place operators ----------------------------------------------------------------------
    # NotImplemented for a non-operand: Python then tries ``self + other`` and other.__radd__.
    def __iadd__(self, other: Any) -> Tensor:
        return self.add_(other) if _is_operand(other) else NotImplemented

    def __isub__(self, other: Any) -> Tensor:
        return self.sub_(other) if _is_operand(other) else NotImplemented

    def __imul__(self, other: Any) -> Tensor:
        return self.mul_(other) if _is_operand(other) else NotImplemented

    def __itruediv__(self, other: Any) -> Tensor:
        return self.div_(other) if _is_operand(other) else NotImplemented

    def add_(self, other: Any, *, alpha: builtins.float = 1) -> Tensor:
        """In place ``self += alpha * other``."""
        return _ops.inplace(self, _ops.add, other, alpha=alpha)

    def sub_(self, other: Any, *, alpha: builtins.float = 1) -> Tensor:
        """In place ``self -= alpha * other``."""
        return _ops.inplace(self, _ops.sub, other, alpha=alpha)

    def mul_(self, other: Any) -> Tensor:
        """In place ``self *= other``."""
        return _ops.inplace(self, _ops.mul, other)

    def div_(self, other: Any) -> Tensor:
        """In place ``self /= other``."""
        return _ops.inplace(self, _ops.div, other)

    def pow_(self, other: Any) -> Tensor:
        """In place ``self **= other``."""
        return _ops.inplace(self, _ops.pow, other)

    def clamp_(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
        """In place clamp."""
        return _ops.inplace(self, _ops.clamp, min, max)

    def exp_(self) -> Tensor:
        """In place ``exp``."""
        return _ops.inplace(self, _ops.exp)

    def relu_(self) -> Tensor:
        """In place ``relu``."""
        return _ops.inplace(self, _ops.relu)

    def neg_(self) -> Tensor:
        """In place negation."""
        return _ops.inplace(self, _ops.neg)

    def masked_fill_(self, mask: Any, value: Any) -> Tensor:
        """In place ``masked_fill``."""
        return _ops.inplace(self, _ops.masked_fill, mask, value)

    def copy_(self, src: Any) -> Tensor:
        """Copy ``src`` (broadcast, cast to self's dtype) into self."""
        return _ops.copy_(self, src)

    def zero_(self) -> Tensor:
        """Fill with zeros."""
        return _ops.fill_(self, 0)

    def fill_(self, value: Any) -> Tensor:
        """Fill with ``value``."""
        return _ops.fill_(self, value)

    def uniform_(self, low: builtins.float = 0.0, high: builtins.float = 1.0) -> Tensor:
        """Fill with samples from U(low, high) (the device's seeded generator)."""
        return _ops.fill_random_(self, "uniform", low, high)

    def normal_(self, mean: builtins.float = 0.0, std: builtins.float = 1.0) -> Tensor:
        """Fill with samples from N(mean, std^2) (the device's seeded generator)."""
        return _ops.fill_random_(self, "normal", mean, std)

    if TYPE_CHECKING:
        # The methods _install_methods() copies from _ops.TENSOR_METHODS at import (``x.sum(0)``
        # is ``_ops.sum(x, 0)``) are invisible to mypy: type them as Any. Type checking only;
        # at run time a missing attribute is a plain AttributeError.
        def __getattr__(self, name: str) -> Any: ...

        # The operators _install_operators() makes (mypy does not look operators up through
        # __getattr__).
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __lshift__(self, other: Any) -> Tensor: ...
        def __rlshift__(self, other: Any) -> Tensor: ...
        def __rshift__(self, other: Any) -> Tensor: ...
        def __rrshift__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __eq__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Tensor: ...  # type: ignore[override]


def _both_bool(x: Tensor, other: Any) -> builtins.bool:
    """``&``, ``|``, ``^`` are logical between bools, bitwise (promoting) otherwise: a bool
    tensor ``& 3`` is int64, as in PyTorch."""
    return x.dtype.kind == "b" and (other.__class__ is builtins.bool or (
        isinstance(other, Tensor) and other.dtype.kind == "b"))


class _PostAccumulateHandle:
    """Returned by ``register_post_accumulate_grad_hook``; ``remove()`` unregisters it."""

    def __init__(self, tensor: Tensor, hook: Any) -> None:
        self._tensor = weakref.ref(tensor)
        self._hook = hook

    def remove(self) -> None:
        from .autograd.engine import POST_ACCUMULATE_HOOKS, post_accumulate_hooks

        tensor = self._tensor()
        hooks = post_accumulate_hooks(tensor) if tensor is not None else []
        if self._hook in hooks:
            hooks.remove(self._hook)
            if not hooks:
                del POST_ACCUMULATE_HOOKS[id(tensor)]


class _HookHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks: list[Any], hook: Any) -> None:
        self._hooks = hooks
        self._hook = hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _binary_operator(name: str, op: Any, reflected: builtins.bool) -> Callable[..., Any]:
    """Tensor's operator ``name``: ``op`` on ``(self, other)``, or ``(other, self)`` when
    ``reflected``; NotImplemented when ``other`` is no operand (see :mod:`pullback._operands`)."""
    if reflected:
        def operator(self: Tensor, other: Any) -> Any:
            if other.__class__ in _OPERANDS or _is_operand(other):
                return apply(op, other, self)
            return NotImplemented
    else:
        def operator(self: Tensor, other: Any) -> Any:
            if other.__class__ in _OPERANDS or _is_operand(other):
                return apply(op, self, other)
            return NotImplemented
    operator.__name__ = name
    operator.__qualname__ = f"Tensor.{name}"
    return operator


def _install_operators() -> None:
    """The operators that run one op, each with its reflected twin (``__radd__``)."""
    reflected = {"add": _E.ADD, "sub": _E.SUB, "mul": _E.MUL, "truediv": _E.DIV,
                 "floordiv": _R.FLOOR_DIVIDE, "mod": _R.REMAINDER, "pow": _E.POW,
                 "lshift": _B.LEFT_SHIFT, "rshift": _B.RIGHT_SHIFT}
    for name, op in reflected.items():
        setattr(Tensor, f"__{name}__", _binary_operator(f"__{name}__", op, False))
        setattr(Tensor, f"__r{name}__", _binary_operator(f"__r{name}__", op, True))
    # Comparisons have no reflected twins: Python swaps ``a < b`` into ``b > a`` itself.
    comparisons = {"eq": _E.EQUAL, "ne": _E.NOT_EQUAL, "lt": _E.LESS, "le": _E.LESS_EQUAL,
                   "gt": _E.GREATER, "ge": _E.GREATER_EQUAL}
    for name, op in comparisons.items():
        setattr(Tensor, f"__{name}__", _binary_operator(f"__{name}__", op, False))


def _install_methods() -> None:
    """Methods that are plain calls of the public functions (``x.exp()`` is ``exp(x)``)."""
    for name in _ops.TENSOR_METHODS:
        if not hasattr(Tensor, name):
            setattr(Tensor, name, getattr(_ops, name))


# Imported last: the op modules need the Tensor class defined above.
from . import _ops  # noqa: E402
from ._ops import bitwise as _B, elementwise as _E, rounding as _R  # noqa: E402
from .dispatch import apply, notify_host_read  # noqa: E402
from .dispatch import state as _dispatch_state  # noqa: E402
from ._operands import OPERAND_CLASSES as _OPERANDS, is_operand as _is_operand  # noqa: E402

_install_operators()
_install_methods()
