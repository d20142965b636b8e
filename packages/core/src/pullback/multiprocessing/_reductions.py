"""How tensors and modules cross to other processes: as data, never as pickled objects.

Under ``spawn`` (and ``forkserver``) Python's multiprocessing pickles a Process's arguments,
and a ``Queue`` pickles what it carries. PyTorch pickles its tensors' storages by reference to
shared memory and its modules as ordinary pickled objects (class by reference plus
``__dict__``). pullback hands the pickler only plain data instead:

* a tensor becomes (its class's name, a file descriptor of its shared memory, and the layout:
  dtype name, shape, strides, offset, ``requires_grad``); it is moved into shared memory first,
  as PyTorch does, so both processes then see the same numbers;
* a module becomes the JSON description ``pullback.save`` writes (classes by name, attributes
  as data) and its tensors as above.

The receiving side rebuilds them with pullback's own functions (the only globals in the
message besides multiprocessing's descriptor carrier), which create no object but through
:func:`pullback.serialization.from_data`: classes found by name among modules already imported,
made without ``__init__``. A peer process can therefore make the receiver rebuild pullback
objects, and nothing else. (Python's multiprocessing still pickles the rest of what is sent,
the target function and plain arguments, as it always does; that is the standard library's
trust model for its own processes, not pullback's file format.)
"""

from __future__ import annotations

import json
from multiprocessing import context, reduction
from typing import Any

from .._safe_globals import global_name, resolve
from ..errors import AutogradError, DeviceError
from ..tensor import Tensor
from . import _shared_memory

_WHERE = "<sent from another process>"


def spawning() -> bool:
    """Whether multiprocessing is pickling the arguments of a process it starts."""
    return context.get_spawning_popen() is not None


def _sendable_array(t: Tensor) -> Any:
    if t.device.type != "cpu":
        raise DeviceError(f"cannot send a tensor on {t.device} to another process: "
                          "pullback.multiprocessing shares CPU tensors only")
    if t.requires_grad and not t.is_leaf:
        raise AutogradError(  # PyTorch's words
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the "
            "queue).")
    t.share_memory_()
    mapping, layout = _shared_memory.describe(t.array)
    return reduction.DupFd(mapping.fd), layout


def reduce_tensor(t: Tensor) -> tuple[Any, tuple[Any, ...]]:
    """The reduction of a tensor: moved to shared memory, sent as data."""
    fd, layout = _sendable_array(t)
    return rebuild_tensor, (global_name(type(t)), fd, layout, bool(t.requires_grad))


def rebuild_tensor(class_name: str, fd: Any, layout: tuple[Any, ...],
                   requires_grad: bool) -> Tensor:
    """A tensor sent by :func:`reduce_tensor`, sharing the sender's memory."""
    from ..backends import Device

    cls = resolve(class_name, False, _WHERE)
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"{class_name} is not a Tensor class")
    t = cls.__new__(cls)
    t._init_leaf(_shared_memory.rebuild(fd.detach(), layout), Device("cpu"), requires_grad)
    return t


def reduce_module(module: Any) -> tuple[Any, tuple[Any, ...]]:
    """The reduction of a module: its pickle-free description, its tensors in shared memory
    (plain NumPy arrays it holds travel as bytes)."""
    from ..serialization import to_data

    structure, tensors = to_data(module, _WHERE)
    shared, copied = {}, {}
    for name, t in tensors.items():
        if isinstance(t, Tensor):
            shared[name] = _sendable_array(t)
        else:
            copied[name] = (t.tobytes(), str(t.dtype), t.shape)
    return rebuild_module, (json.dumps(structure), shared, copied)


def rebuild_module(structure: str, shared: dict[str, Any],
                   copied: dict[str, tuple[bytes, str, tuple[int, ...]]]) -> Any:
    """A module sent by :func:`reduce_module`: its parameters and buffers share the sender's
    memory."""
    import numpy as np

    from ..dtypes import to_dtype
    from ..serialization import from_data

    arrays = {name: _shared_memory.rebuild(fd.detach(), layout)
              for name, (fd, layout) in shared.items()}
    for name, (data, dtype, shape) in copied.items():
        arrays[name] = np.frombuffer(data, to_dtype(dtype)).reshape(shape).copy()
    return from_data(json.loads(structure), arrays, _WHERE, None, weights_only=False)


def register(cls: type) -> None:
    """Let multiprocessing's pickler (a ``Queue``, a Pool) send instances of this Tensor class
    as data (it looks reductions up by exact class)."""
    reduction.ForkingPickler.register(cls, reduce_tensor)


def register_tensor_classes() -> None:
    """Register Tensor and every subclass defined so far (``pullback.nn.Parameter``)."""
    pending = [Tensor]
    while pending:
        cls = pending.pop()
        register(cls)
        pending.extend(cls.__subclasses__())
