"""``BatchedTensor`` and the dispatch mode of :func:`pullback.func.vmap`.

A batched tensor is one sample of a batch as user code sees it: its shape is a sample's shape,
and its ``_value`` holds every sample, stacked along ``_bdim``. The mode of its level sends each
op to the op's ``"batch"`` rule, which computes all samples at once with the ops of the levels
below (so the number of ops dispatched does not depend on the batch size).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback
from pullback.dispatch import DispatchMode, apply, draw_random
from pullback.registry import Op
from pullback.tensor import Tensor

from ._batch_rules import batch_rule
from ._batch_rules._util import advanced_block_in_place, move_dim
from ._errors import VmapError
from ._levels import Level, WrapperTensor, split_args

class BatchArray(np.ndarray):
    """The backend array of a batched tensor as ``.array`` hands it out: every sample, batch dims
    included. Python-side checks over the values (an index's range) see the whole batch; the
    mark (``owner``, the batched tensor) lets vmap batch an index key made from it, and refuse
    arrays computed from it in Python (``owner`` None), which it cannot batch."""

    owner: Any = None

    def __array_finalize__(self, obj: Any) -> None:
        self.owner = None  # a view or a result of NumPy code: no longer the tensor's own

    @property
    def strides(self) -> tuple[int, ...]:  # type: ignore[override]
        """One sample's strides (the batch dims left out), matching the tensor's logical
        shape, for Python checks of the layout (``view``); NumPy itself uses the real ones."""
        if self.owner is None:
            return np.ndarray.strides.__get__(self)
        return _sample_strides(self.owner)


INDEX_KEY_MESSAGE = (
    "pullback.func.vmap: a batched tensor is used as an index key (x[batched_index]); vmap "
    "cannot batch keys of Python indexing. Use pullback.index_select, gather or "
    "take_along_axis, whose index is an op input"
)


class BatchedTensor(WrapperTensor):
    """One sample of a batch inside :func:`pullback.func.vmap` (all samples live in ``_value``,
    stacked along axis ``_bdim``)."""

    __slots__ = ("_bdim",)

    _bdim: int

    @property
    def array(self) -> Any:  # type: ignore[override]
        """Every sample's values (the physical array, batch dims included), marked so that vmap
        refuses it as an index key."""
        arr = self._value.array
        if isinstance(arr, np.ndarray):
            arr = arr.view(BatchArray)
            arr.owner = self
        return arr

    @property
    def requires_grad(self) -> bool:  # type: ignore[override]
        return self._value.requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        raise VmapError(
            "requires_grad_() on a batched tensor inside vmap: differentiate with "
            "pullback.func.grad (vmap(grad(f)) gives per-sample gradients)"
        )

    def __repr__(self) -> str:
        return (f"BatchedTensor(level={self._level.index}, bdim={self._bdim}, "
                f"shape={self._shape}, value={self._value!r})")

    # -- values cannot be read one sample at a time -------------------------------------------
    def _host_read(self, what: str) -> Any:
        raise VmapError(
            f"{what} on a batched tensor inside vmap: its value differs per sample, so Python "
            "cannot branch on it or convert it (data-dependent control flow is not batchable; "
            "use pullback.where)"
        )

    def item(self) -> Any:
        return self._host_read("item()")

    def tolist(self) -> Any:
        return self._host_read("tolist()")

    def numpy(self) -> Any:
        return self._host_read("numpy()")

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self._host_read("numpy.asarray()")

    def __bool__(self) -> bool:
        return self._host_read("bool()")

    def __float__(self) -> float:
        return self._host_read("float()")

    def __int__(self) -> int:
        return self._host_read("int()")

    def __index__(self) -> int:
        return self._host_read("__index__()")

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._host_read("__dlpack__()")

    # -- conversions keep the batch ------------------------------------------------------------
    def detach(self) -> Tensor:
        return make_batched(self._value.detach(), self._bdim, self._level)

    def contiguous(self) -> Tensor:
        return self

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        value = self._value.to(*args, **kwargs)
        return self if value is self._value else make_batched(value, self._bdim, self._level)

    # -- in-place ops (see WrapperTensor): computed out of place, written into every sample ----
    def _assign(self, result: Any, name: str) -> Tensor:
        """Write ``result`` (this tensor's logical shape) into the batch in place."""
        if tuple(result.shape) != self._shape:
            raise VmapError(f"{name}: the result has shape {tuple(result.shape)} but the batched "
                            f"tensor written in place has shape {self._shape}")
        if isinstance(result, BatchedTensor) and result._level is self._level:
            value = move_dim(result._value, result._bdim, self._bdim)
        else:
            value = pullback.broadcast_to(result, self._shape)
            value = move_dim(pullback.unsqueeze(value, 0), 0, self._bdim)
            value = pullback.broadcast_to(value, tuple(self._value.shape))
        write_into(self._value, value, name)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        key = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, BatchedTensor) for k in key):
            raise VmapError("__setitem__: indexing with a batched index tensor inside vmap is not "
                            "supported; build the result with pullback.where or scatter_add")
        if not advanced_block_in_place(key):
            raise VmapError("__setitem__: inside vmap, advanced indices (arrays, tensors) must be "
                            "next to each other in the key, as NumPy then keeps their place")
        selected = selection_ndim(self._shape, key)
        if isinstance(value, BatchedTensor) and value._level is self._level:
            v = move_dim(value._value, value._bdim, 0)
            lead = selected - value.ndim
            if lead > 0:  # line the sample's dims up with the selection's trailing dims
                v = pullback.reshape(v, (v.shape[0],) + (1,) * lead + tuple(v.shape[1:]))
        else:
            v = value
        front = move_dim(self._value, self._bdim, 0)  # a view: the write lands in the batch
        front[(slice(None),) + key] = v


def selection_ndim(shape: tuple[int, ...], key: tuple[Any, ...]) -> int:
    """How many dims ``x[key]`` has for ``x`` of ``shape`` (indexed on a zero-stride stand-in,
    so that no memory is touched)."""
    import numpy as np

    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, dtype=bool), shape, (0,) * len(shape))
    host = tuple(np.asarray(k.array) if isinstance(k, Tensor) else k for k in key)
    return stand_in[host].ndim


def _sample_strides(t: Any) -> tuple[int, ...]:
    value = t._value
    strides = (_sample_strides(value) if isinstance(value, BatchedTensor)
               else tuple(value.array.strides))
    return strides[:t._bdim] + strides[t._bdim + 1:]


def keyed_by(key: tuple[Any, ...], level: Level) -> bool:
    """Whether an index key holds the array of a batched tensor of ``level`` (an error for
    arrays computed from a batched tensor's values in Python, which cannot be batched)."""
    found = False
    for k in key:
        if k.__class__ is BatchArray:
            owner = k.owner
            if owner is None or not owner._level.alive:
                raise VmapError(INDEX_KEY_MESSAGE)
            found = found or owner._level is level
    return found


def batched_key(op: Op, args: tuple[Any, ...], attrs: dict[str, Any], size: int,
                level: Level) -> Any:
    """An indexing op whose key holds batched index tensors of ``level``: each sample is indexed
    with its own indices (see :func:`pullback.func._batch_rules.index.index_by_batched_key`)."""
    from ._batch_rules.index import index_by_batched_key

    key = tuple((k.owner._value, k.owner._bdim) if k.__class__ is BatchArray
                and k.owner._level is level else k for k in attrs["key"])
    values = tuple(a._value if isinstance(a, BatchedTensor) and a._level is level else a
                   for a in args)
    bdims = tuple(a._bdim if isinstance(a, BatchedTensor) and a._level is level else None
                  for a in args)
    out = index_by_batched_key(op, values, bdims, size, key, **{
        k: v for k, v in attrs.items() if k != "key"})
    return make_batched(out, 0, level)


def make_batched(value: Tensor, bdim: int, level: Level) -> BatchedTensor:
    """The batched tensor of ``level`` whose samples are ``value``'s slices along ``bdim``."""
    t = BatchedTensor.__new__(BatchedTensor)
    shape = tuple(value.shape)
    t._init_wrapper(value, level, shape[:bdim] + shape[bdim + 1:])
    t._bdim = bdim
    t._requires_grad = value._requires_grad
    return t


def write_into(target: Tensor, value: Tensor, name: str) -> None:
    """Store ``value`` into ``target``'s memory (through the levels below, if any)."""
    if isinstance(target, WrapperTensor):
        target._assign(value, name)  # type: ignore[attr-defined]
        return
    from pullback._ops.mutation import inplace

    def store(t: Tensor, v: Tensor) -> Tensor:
        return v if v.dtype == t.dtype else v.to(t.dtype)

    store.__name__ = name.rstrip("_")
    inplace(target, store, value)


class VmapMode(DispatchMode):
    """The dispatch mode of one vmap level: batches every op that touches its tensors."""

    def __init__(self, level: Level, size: int, randomness: str) -> None:
        self.level = level
        self.size = size
        self.randomness = randomness

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        level = self.level
        if "key" in attrs and keyed_by(attrs["key"], level):
            return batched_key(op, args, attrs, self.size, level)
        values, bdims = split_args(args, BatchedTensor, level, "_bdim")
        if values is None:
            return apply(op, *args, **attrs)
        out, out_bdim = batch_rule(op)(op, tuple(values), tuple(bdims), self.size, **attrs)
        if out.__class__ is tuple:  # several outputs (first-order backward ops)
            return tuple(o if o is None or b is None else make_batched(o, b, level)
                         for o, b in zip(out, out_bdim))
        if out_bdim is None:
            return out
        return make_batched(out, out_bdim, level)

    def random(self, draw: Callable[[tuple[int, ...]], Tensor], shape: tuple[int, ...]) -> Tensor:
        if self.randomness == "error":
            raise VmapError(
                f"vmap: random numbers of shape {tuple(shape)} drawn inside vmap with "
                "randomness='error' (the default); pass randomness='same' (one draw shared by "
                "every sample) or 'different' (one draw per sample)"
            )
        if self.randomness == "same":
            return draw_random(draw, shape)
        return make_batched(draw_random(draw, (self.size,) + tuple(shape)), 0, self.level)

    def on_function_call(self, function: type, args: tuple[Any, ...]) -> None:
        # A forward that reads .array would see every sample at once and compute a silently
        # wrong result; torch.func refuses such Functions the same way unless told otherwise.
        if getattr(function, "generate_vmap_rule", False):
            return
        if any(isinstance(a, BatchedTensor) and a._level is self.level for a in args):
            raise VmapError(
                f"vmap: the custom autograd.Function {function.__name__} was called on batched "
                "tensors; its forward could read their arrays, which hold every sample. If it "
                "computes only with pullback ops, set generate_vmap_rule = True on the class "
                "(as for torch.func); otherwise register the computation as an op with a batch "
                "rule"
            )

    def on_function_node(self, node: Any) -> None:
        if any(isinstance(a, BatchedTensor) and a._level is self.level for a in node.args):
            raise VmapError(
                f"vmap: the custom autograd.Function {node.name} was called on batched tensors "
                "while recording a gradient; vmap cannot batch its backward"
            )
