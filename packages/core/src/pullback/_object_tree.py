"""Whole objects in checkpoints, without pickle: ``pullback.save(model, f)`` and
``pullback.load(f)``.

:mod:`pullback.serialization` writes tensors, dicts, lists, tuples and JSON values itself and
hands everything else to :func:`encode`, which writes it as data:

* an instance of a plain class (a Module, a config object): its class by name and its
  attributes (``__dict__``), each encoded again: ``{"__object__": key, "class": "__main__.Net",
  "state": {...}}``; an object reached a second time (a shared submodule, a cycle) is
  ``{"__ref__": key}``;
* a class or module-level function (an activation a layer holds): ``{"__global__": name}``;
* dtypes, devices, ``OrderedDict``, ``set`` and ``frozenset``: small tagged values.

:func:`decode` rebuilds them. A class comes only from the allow-list (:mod:`._safe_globals`;
with ``weights_only=False``, from modules already imported). An instance is made with
``object.__new__`` and its ``__dict__`` filled from the file: the class's ``__init__``,
``__new__`` and ``__setstate__`` never run, so a file cannot make anything happen beyond
setting attributes of allowed classes. A class may check what it gets through a classmethod
``_validate_loaded_state(state, where)`` (``pullback.nn.Module`` checks its registries), which
is the class's own code, not the file's.

A class whose attributes are not plain data (``pullback.fx.GraphModule``: a graph of nodes
that name functions, and a ``forward`` generated from it) describes itself instead: its
``_state_to_save()`` returns the class to store it as and the attributes to write, and its
``_restore_loaded_state(state, where)`` finishes an instance made by ``object.__new__`` from
those attributes, decoded, after ``_validate_loaded_state``. Both are the class's own code; the
file still only holds data.
"""

from __future__ import annotations

import contextlib
import contextvars
import types
from collections import OrderedDict
from typing import Any, Callable, Iterator

import numpy as np

from ._safe_globals import _imported, global_name, resolve
from .errors import CheckpointError

MARKERS = ("__object__", "__ref__", "__global__", "__dtype__", "__device__", "__ordered_dict__",
           "__set__", "__frozenset__")

_weights_only: contextvars.ContextVar[bool] = contextvars.ContextVar("pullback_weights_only",
                                                                    default=True)

Encode = Callable[[Any, str], Any]
Decode = Callable[[Any], Any]


@contextlib.contextmanager
def loading(weights_only: bool) -> Iterator[None]:
    """Decode under ``weights_only`` (True: allow-listed classes only)."""
    token = _weights_only.set(weights_only)
    try:
        yield
    finally:
        _weights_only.reset(token)


def weights_only() -> bool:
    """Whether the load in progress is ``weights_only`` (for a class's own
    ``_restore_loaded_state``, which may resolve names through the allow-list)."""
    return _weights_only.get()


def encode(obj: Any, path: str, encode_value: Encode, seen: dict[int, str], file: str) -> Any:
    """``obj`` (no tensor, dict, list, tuple or JSON value) as JSON; ``encode_value(v, path)``
    encodes what it holds, ``seen`` maps ids of objects already written to their keys."""
    from .backends import Device

    where = path or "<root>"
    if isinstance(obj, np.dtype):
        return {"__dtype__": str(obj)}
    if isinstance(obj, Device):
        return {"__device__": str(obj)}
    if isinstance(obj, OrderedDict):
        for k in obj:
            _check_key(k, where, file)
        return {"__ordered_dict__": [[k, encode_value(v, _join(path, k))] for k, v in obj.items()]}
    if isinstance(obj, (set, frozenset)):
        tag = "__set__" if isinstance(obj, set) else "__frozenset__"
        items = sorted(obj, key=repr)  # a stable order, so equal sets give equal files
        return {tag: [encode_value(v, _join(path, i)) for i, v in enumerate(items)]}
    if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)):
        return {"__global__": _name_of_global(obj, where, file)}
    key = seen.get(id(obj))
    if key is not None:
        return {"__ref__": key}
    cls = type(obj)
    _check_storable(obj, where, file)
    key = f"object:{where}"
    seen[id(obj)] = key
    describe = getattr(cls, "_state_to_save", None)
    if describe is not None:
        cls, state = describe(obj)
    else:
        state = dict(object.__getattribute__(obj, "__dict__"))
    return {"__object__": key, "class": _name_of_global(cls, where, file),
            "state": encode_value(state, path)}


def decode(entry: dict[str, Any], decode_value: Decode, made: dict[Any, Any], file: str) -> Any:
    """The value an :func:`encode` entry describes; ``made`` holds the objects rebuilt so far
    by key (for ``__ref__``)."""
    weights_only = _weights_only.get()
    if "__object__" in entry:
        return _rebuild(entry, decode_value, made, file, weights_only)
    if "__ref__" in entry:
        key = entry["__ref__"]
        if not isinstance(key, str) or ("object", key) not in made:
            raise CheckpointError(f"load({file!r}): reference {key!r} to an object the file "
                                  "does not define before it")
        return made["object", key]
    if "__global__" in entry:
        return resolve(entry["__global__"], weights_only, file)
    if "__dtype__" in entry:
        from .dtypes import to_dtype

        name = entry["__dtype__"]
        if not isinstance(name, str):
            raise CheckpointError(f"load({file!r}): malformed dtype {name!r}")
        return to_dtype(name)
    if "__device__" in entry:
        from .backends import Device

        spec = entry["__device__"]
        if not isinstance(spec, str):
            raise CheckpointError(f"load({file!r}): malformed device {spec!r}")
        return Device(spec)
    if "__ordered_dict__" in entry:
        pairs = entry["__ordered_dict__"]
        if not isinstance(pairs, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], (str, int))
                and not isinstance(p[0], bool) for p in pairs):
            raise CheckpointError(f"load({file!r}): malformed OrderedDict {pairs!r}")
        return OrderedDict((k, decode_value(v)) for k, v in pairs)
    tag = "__set__" if "__set__" in entry else "__frozenset__"
    items = entry[tag]
    if not isinstance(items, list):
        raise CheckpointError(f"load({file!r}): malformed {tag} {items!r}")
    values = [decode_value(v) for v in items]
    try:
        return set(values) if tag == "__set__" else frozenset(values)
    except TypeError:
        raise CheckpointError(f"load({file!r}): a set holds unhashable values") from None


def tensor_class(name: Any, file: str) -> type:
    """The Tensor subclass (``pullback.nn.Parameter``) a tensor entry names."""
    from .tensor import Tensor

    cls = resolve(name, _weights_only.get(), file)
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise CheckpointError(f"load({file!r}): {name} is not a Tensor class")
    return cls


def _rebuild(entry: dict[str, Any], decode_value: Decode, made: dict[Any, Any], file: str,
             weights_only: bool) -> Any:
    key = entry["__object__"]
    if not isinstance(key, str) or not key.startswith("object:") or ("object", key) in made:
        raise CheckpointError(f"load({file!r}): malformed or repeated object key {key!r}")
    cls = resolve(entry.get("class"), weights_only, file)
    where = key[len("object:"):]
    if not isinstance(cls, type) or not _rebuildable(cls):
        raise CheckpointError(
            f"load({file!r}): {entry.get('class')} at '{where}' is not a class pullback can "
            "rebuild from data (a plain Python class with a __dict__, no __new__ or __del__)")
    obj = object.__new__(cls)  # no __new__ or __init__ of the class runs
    made["object", key] = obj  # tensors are in ``made`` by name, objects by ("object", key)
    state = decode_value(entry.get("state"))
    if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
        raise CheckpointError(f"load({file!r}): the attributes of {entry['class']} at '{where}' "
                              f"are {type(state).__name__}, not a dict of names")
    validate = getattr(cls, "_validate_loaded_state", None)
    if validate is not None:
        validate(state, f"load({file!r}): {entry['class']} at '{where}'")
    restore = getattr(cls, "_restore_loaded_state", None)
    if restore is not None:
        restore(obj, state, f"load({file!r}): {entry['class']} at '{where}'")
        return obj
    # Not setattr, not __setstate__, not the class's __getattribute__: nothing of it runs.
    object.__getattribute__(obj, "__dict__").update(state)
    return obj


def _rebuildable(cls: type) -> bool:
    """Whether instances of ``cls`` are plain objects whose whole state is their ``__dict__``
    (made by ``object.__new__``: no C layout, no slots), with no ``__del__`` (a finalizer would
    run on whatever state a file gave the object)."""
    if cls.__new__ is not object.__new__:
        return False
    if any("__del__" in vars(klass) for klass in cls.__mro__[:-1]):
        return False
    for klass in cls.__mro__[:-1]:
        if "__slots__" in vars(klass) and vars(klass)["__slots__"] not in ((), [], "__dict__"):
            return False
    try:
        object.__new__(cls)
    except TypeError:
        return False
    return True


def _check_storable(obj: Any, where: str, file: str) -> None:
    cls = type(obj)
    try:
        object.__getattribute__(obj, "__dict__")
    except AttributeError:
        has_dict = False
    else:
        has_dict = True
    if isinstance(obj, types.ModuleType) or not has_dict or not _rebuildable(cls):
        raise CheckpointError(
            f"save({file!r}): cannot store a {cls.__name__} at '{where}': checkpoints hold "
            "tensors, dicts, lists, tuples, JSON values, dtypes, devices, and objects of plain "
            "classes (their __dict__; no __slots__, __new__ or __del__; no pickle)")


def _name_of_global(obj: Any, where: str, file: str) -> str:
    """The name a class or function is stored under; it must be findable by that name."""
    name = global_name(obj)
    if _imported(name) is not obj:
        what = "class" if isinstance(obj, type) else "function"
        raise CheckpointError(
            f"save({file!r}): cannot store the {what} {name} at '{where}': only classes and "
            "functions defined at a module's top level are stored (by name); define it there")
    return name


def _check_key(key: Any, where: str, file: str) -> None:
    if not isinstance(key, (str, int)) or isinstance(key, bool):
        raise CheckpointError(f"save({file!r}): dict keys must be str or int, got "
                              f"{type(key).__name__} {key!r} at '{where}'")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)
