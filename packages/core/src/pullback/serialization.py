"""Checkpoints: ``pullback.save(obj, path)`` and ``pullback.load(path)`` in the safetensors format.

A checkpoint is one safetensors file. Its tensors are the tensors found in ``obj``; its metadata
holds, as JSON, the structure around them (nested dicts, lists, tuples and plain JSON values:
ints, floats, strings, booleans, ``None``) and, per tensor, its dtype, device and
``requires_grad``. Whole objects (``pullback.save(model, f)``) are written as data too, their
class by name and their attributes (:mod:`pullback._object_tree`); loading rebuilds only
allow-listed classes (``add_safe_globals``, :mod:`pullback._safe_globals`). Nothing is pickled,
so loading a file never runs code.

Writes are atomic: the file is written to a temporary file in the same folder and moved into
place with :func:`os.replace`, so a crash leaves either the old file or the new one; a symbolic
link, FIFO or folder where the file goes is refused, never written through (see
:mod:`pullback._files`, which also removes what a killed save left behind).

Loading reads a regular file only (a FIFO or a device such as ``/dev/zero`` is refused before a
byte is read) and checks the header against the file's size before reading the tensors: a
truncated or malformed file, a header that lies about its offsets, or malformed pullback
metadata raises :class:`~pullback.errors.CheckpointError` naming the file.

A safetensors file written by another tool (no pullback metadata) loads as a flat dict of
tensors.
"""

from __future__ import annotations

import json
import os
from typing import Any, BinaryIO

import numpy as np

from . import _object_tree
from ._safe_globals import (  # noqa: F401 - torch.serialization's names
    UnsafeGlobalError, add_safe_globals, clear_safe_globals, get_safe_globals, global_name,
    safe_globals,
)
from ._files import open_regular, write_atomic
from .backends import Device
from .errors import CheckpointError, DeviceError
from .tensor import Tensor

# torch.serialization's names; to_data/from_data serve pullback.multiprocessing.
__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "load", "safe_globals",
           "save"]

FORMAT_KEY = "pullback.format"
STRUCTURE_KEY = "pullback.structure"
FORMAT_VERSION = "1"

# safetensors' dtype codes (as written in the header) and the NumPy dtypes they load as.
_CODES: dict[str, Any] = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
    "I16": np.int16, "I8": np.int8, "U64": np.uint64, "U32": np.uint32, "U16": np.uint16,
    "U8": np.uint8, "BOOL": np.bool_, "C64": np.complex64,
}


def _bfloat16() -> Any:
    from .dtypes import bfloat16

    return bfloat16


def save(obj: Any, path: str | os.PathLike[str] | BinaryIO) -> None:
    """Save a tensor, a (nested) state dict or a whole model to ``path`` as a safetensors file.

    ``obj`` may be a Tensor or any nesting of dicts (string or int keys), lists and tuples whose
    leaves are Tensors, NumPy arrays or plain JSON values, e.g. a model's ``state_dict()`` or an
    optimizer's. A tensor that appears twice (tied weights) is stored once and comes back as one
    object. A whole Module (or another object of a plain class) is stored as its class's name
    and its attributes, without pickle; :func:`load` rebuilds it only if the class is allowed
    (pullback.nn's layers are; allow yours with :func:`add_safe_globals`).

    ``path`` is a file name (the write is atomic) or, as in PyTorch, a binary file object open
    for writing (an open file, ``io.BytesIO``), which gets the bytes at its position.

    Example:
        >>> import pullback, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "w.safetensors")
        >>> pullback.save({"w": pullback.ones(2), "step": 3}, path)
        >>> pullback.load(path)["step"]
        3
    """
    writer = path if hasattr(path, "write") else None
    path = _file_name(path)
    structure, tensors = to_data(obj, path)
    arrays = {name: _host_array(t) for name, t in tensors.items()}
    metadata = {FORMAT_KEY: FORMAT_VERSION, STRUCTURE_KEY: json.dumps(structure)}
    from safetensors.numpy import save as to_bytes

    data = to_bytes(arrays, metadata=metadata)
    if writer is not None:
        writer.write(data)
        return
    write_atomic(path, data)


def _file_name(path: Any) -> str:
    """``path`` as a string, for a file name or a file object (its ``name``, if it has one)."""
    if hasattr(path, "write") or hasattr(path, "read"):
        return str(getattr(path, "name", f"<{type(path).__name__}>"))
    return os.fspath(path)


def _tensor_name(path: str, arrays: dict[str, Any]) -> str:
    """A unique name for the tensor at ``path`` (the dotted key itself for flat state dicts)."""
    name = path or "tensor"
    n = 1
    while name in arrays:
        name = f"{path}#{n}"
        n += 1
    return name


def to_data(obj: Any, file: str) -> tuple[Any, dict[str, Any]]:
    """What :func:`save` writes, before bytes: the JSON structure of ``obj`` and the Tensors
    and NumPy arrays it refers to by name (themselves, not copies: pullback.multiprocessing
    sends them through shared memory)."""
    tensors: dict[str, Any] = {}
    return _encode(obj, "", tensors, {}, file), tensors


def _encode(obj: Any, path: str, arrays: dict[str, Any], names_by_id: dict[int, str],
            file: str) -> Any:
    """``obj`` as JSON, with tensors moved into ``arrays`` and referenced by name (objects of
    other kinds go to :func:`pullback._object_tree.encode`; ``names_by_id`` names every tensor
    and object already written)."""
    if isinstance(obj, Tensor) or isinstance(obj, np.ndarray):
        ref = names_by_id.get(id(obj))
        if ref is None:
            ref = _tensor_name(path, arrays)
            names_by_id[id(obj)] = ref
            arrays[ref] = obj
        info: dict[str, str | bool] = {"__tensor__": ref, "dtype": str(arrays[ref].dtype)}
        if isinstance(obj, Tensor):
            info["device"] = str(obj.device)
            info["requires_grad"] = bool(obj.requires_grad)
            if type(obj) is not Tensor:  # pullback.nn.Parameter
                info["class"] = global_name(type(obj))
        else:
            info["numpy"] = True
        return info
    if type(obj) is dict:
        plain = all(isinstance(k, str) and not k.startswith("__") for k in obj)
        items = [(k, _encode(v, _join(path, k), arrays, names_by_id, file)) for k, v in obj.items()]
        for k, _ in items:
            if not isinstance(k, (str, int)) or isinstance(k, bool):
                raise CheckpointError(
                    f"save({file!r}): dict keys must be str or int, got {type(k).__name__} "
                    f"{k!r} at '{path or '<root>'}'"
                )
        return dict(items) if plain else {"__dict__": [[k, v] for k, v in items]}
    if isinstance(obj, list):
        return [_encode(v, _join(path, i), arrays, names_by_id, file) for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"__tuple__": [_encode(v, _join(path, i), arrays, names_by_id, file)
                              for i, v in enumerate(obj)]}
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return _object_tree.encode(
        obj, path, lambda v, p: _encode(v, p, arrays, names_by_id, file), names_by_id, file)


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _host_array(obj: Any) -> np.ndarray:
    if isinstance(obj, Tensor):
        arr = obj.device.backend.to_host(obj.array)
    else:
        arr = obj
    # safetensors stores dense little-endian bytes (ascontiguousarray would turn 0-d into 1-d).
    arr = arr if arr.flags.c_contiguous else arr.copy(order="C")
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return arr


def load(path: str | os.PathLike[str] | BinaryIO, map_location: Any = None, *,
         weights_only: bool | None = None) -> Any:
    """Load what :func:`save` wrote (or any safetensors file, as a flat dict of tensors).

    Args:
        path: the file name, or a binary file object open for reading (read from its
            position to its end).
        map_location: a device (``"cpu"``, ``"cuda:0"``) for every tensor; by default each
            tensor goes back to the device it was saved from.
        weights_only: True (the default, as in PyTorch 2.6): whole objects in the file are
            rebuilt only if their classes are allowed (pullback.nn's layers, and what
            :func:`add_safe_globals` or :class:`safe_globals` added). False: also classes of
            modules this process has already imported. Either way no code from the file runs:
            nothing is imported because the file names it, and no ``__init__`` or
            ``__setstate__`` of a rebuilt class is called.

    Raises:
        UnsafeGlobalError: ``weights_only`` and the file names a class that is not allowed
            (a :class:`CheckpointError`; the message has the line that would allow it).
        CheckpointError: the file is truncated, malformed or not a safetensors file.
        FileNotFoundError: there is no such file.
    """
    if hasattr(path, "read"):
        data = path.read()
        path = _file_name(path)
        header = _read_header(data, path, len(data))
    else:
        path = os.fspath(path)
        data, header = _read_file(path)
    try:
        from safetensors import deserialize

        raw = deserialize(data)
    except Exception as exc:  # safetensors' own error type differs across versions
        raise CheckpointError(f"load({path!r}): not a valid safetensors file ({exc})") from None
    arrays = {name: _to_numpy(info, name, path) for name, info in raw}
    target = Device(map_location) if map_location is not None else None
    meta = header.get("__metadata__") or {}
    if meta.get(FORMAT_KEY) is None:
        return {name: _make_tensor(arr, target or Device("cpu"), False) for name, arr in
                sorted(arrays.items())}
    if meta[FORMAT_KEY] != FORMAT_VERSION:
        raise CheckpointError(
            f"load({path!r}): checkpoint format {meta[FORMAT_KEY]!r} is not supported by this "
            f"pullback (it reads format {FORMAT_VERSION})"
        )
    try:
        structure = json.loads(meta[STRUCTURE_KEY])
    except (KeyError, ValueError, TypeError, RecursionError) as exc:
        raise CheckpointError(f"load({path!r}): malformed pullback metadata ({exc})") from None
    return from_data(structure, arrays, path, target, weights_only is not False)


def from_data(structure: Any, arrays: dict[str, Any], path: str, target: Device | None,
              weights_only: bool) -> Any:
    """What :func:`load` returns for a file's JSON structure and its arrays by name (wrapped
    without copies: pullback.multiprocessing passes arrays in shared memory)."""
    made: dict[str, Any] = {}
    try:
        with _object_tree.loading(weights_only):
            return _decode(structure, arrays, made, target, path)
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
        if isinstance(exc, CheckpointError):
            raise
        # The header is valid JSON, but not the structure save() writes ({"__tuple__": 5},
        # {"__dict__": [null]}...): a damaged or hand-made file.
        raise CheckpointError(f"load({path!r}): malformed pullback metadata ({type(exc).__name__}:"
                              f" {exc})") from None


# safetensors' own limit on the size of a header (its MAX_HEADER_SIZE)
MAX_HEADER_BYTES = 100_000_000


def _read_file(path: str) -> tuple[bytes, dict[str, Any]]:
    """The bytes of the checkpoint ``path`` and its header, read only once the header's
    description of the tensor data fits the file's size."""
    with open_regular(path, CheckpointError, f"load({path!r})") as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        n = _header_length(head, path, size)
        head += f.read(n)
        header = _read_header(head, path, size)
        return head + f.read(size - len(head)), header


def _header_length(data: bytes, path: str, size: int) -> int:
    """The header's length from the first 8 bytes, checked against the file's ``size``."""
    if len(data) < 8:
        raise CheckpointError(f"load({path!r}): file is truncated ({size} bytes)")
    n = int.from_bytes(data[:8], "little")
    if n > size - 8 or n > MAX_HEADER_BYTES:
        raise CheckpointError(
            f"load({path!r}): file is truncated or not a safetensors file (header of {n} bytes, "
            f"file of {size} bytes)"
        )
    return n


def _read_header(data: bytes, path: str, size: int) -> dict[str, Any]:
    """The JSON header of a safetensors file (8 bytes of length, then that much JSON), checked:
    each tensor's offsets lie in the file of ``size`` bytes, and the data they describe ends
    where the file ends."""
    n = _header_length(data, path, size)
    try:
        header = json.loads(data[8:8 + n])
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"load({path!r}): malformed safetensors header ({exc})") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"load({path!r}): malformed safetensors header")
    available = size - 8 - n
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(o) is int for o in offsets) and 0 <= offsets[0] <= offsets[1]):
            raise CheckpointError(f"load({path!r}): tensor {name!r} has malformed data_offsets "
                                  f"{offsets!r} in the header")
        if offsets[1] > available:
            raise CheckpointError(
                f"load({path!r}): tensor {name!r} ends at byte {offsets[1]} of the data, but "
                f"the file holds {available} bytes of data (truncated, or a header that lies)")
        end = max(end, offsets[1])
    if end != available:
        raise CheckpointError(f"load({path!r}): the header describes {end} bytes of tensor "
                              f"data, the file holds {available}")
    return header


def _to_numpy(info: dict[str, Any], name: str, path: str) -> np.ndarray:
    code = info["dtype"]
    dtype = _bfloat16() if code == "BF16" else _CODES.get(code)
    if dtype is None:
        raise CheckpointError(f"load({path!r}): tensor '{name}' has unsupported dtype {code}")
    # Copy: the tensor must own writable memory (optimizers update in place).
    return np.frombuffer(bytes(info["data"]), dtype=dtype).reshape(info["shape"]).copy()


def _make_tensor(arr: np.ndarray, device: Device, requires_grad: bool,
                 cls: type[Tensor] = Tensor) -> Tensor:
    data = arr if device.type == "cpu" else device.backend.from_host(arr, device.index or 0)
    if cls is Tensor:
        t = Tensor._wrap(data, device)
    else:  # a subclass (Parameter): made without its __init__, as every rebuilt class
        t = cls.__new__(cls)
        t._init_leaf(data, device, False)
    if requires_grad:
        t.requires_grad = True
    return t


def _decode(obj: Any, arrays: dict[str, np.ndarray], made: dict[str, Any],
            target: Device | None, path: str) -> Any:
    if isinstance(obj, list):
        return [_decode(v, arrays, made, target, path) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        name = obj["__tensor__"]
        if not isinstance(name, str) or not isinstance(obj.get("device", "cpu"), str):
            raise CheckpointError(f"load({path!r}): malformed tensor entry {obj!r} in the "
                                  "pullback metadata")
        if name in made:
            return made[name]
        if name not in arrays:
            raise CheckpointError(f"load({path!r}): tensor '{name}' is listed but missing")
        if obj.get("numpy"):
            made[name] = arrays[name]
            return arrays[name]
        device = target
        if device is None:
            try:
                device = Device(obj.get("device", "cpu"))
            except DeviceError as exc:
                raise DeviceError(
                    f"load({path!r}): tensor '{name}' was saved on {obj.get('device')} ({exc}); "
                    "pass map_location='cpu'"
                ) from None
            if not device.backend.is_available():
                raise DeviceError(
                    f"load({path!r}): tensor '{name}' was saved on {device}, which is not "
                    "available here; pass map_location='cpu'"
                )
        cls = Tensor if "class" not in obj else _object_tree.tensor_class(obj["class"], path)
        made[name] = _make_tensor(arrays[name], device, bool(obj.get("requires_grad")), cls)
        return made[name]
    if any(marker in obj for marker in _object_tree.MARKERS):
        return _object_tree.decode(obj, lambda v: _decode(v, arrays, made, target, path), made,
                                   path)
    if "__tuple__" in obj:
        items = obj["__tuple__"]
        if not isinstance(items, list):
            raise CheckpointError(f"load({path!r}): malformed pullback metadata: __tuple__ holds "
                                  f"{items!r}, not a list")
        return tuple(_decode(v, arrays, made, target, path) for v in items)
    if "__dict__" in obj:
        pairs = obj["__dict__"]
        if not (isinstance(pairs, list) and all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], (str, int))
                and not isinstance(p[0], bool) for p in pairs)):
            raise CheckpointError(f"load({path!r}): malformed pullback metadata: __dict__ holds "
                                  f"{pairs!r}, not a list of [key, value] pairs")
        return {k: _decode(v, arrays, made, target, path) for k, v in pairs}
    return {k: _decode(v, arrays, made, target, path) for k, v in obj.items()}
