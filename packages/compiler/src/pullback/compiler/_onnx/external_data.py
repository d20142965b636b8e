"""External data of an ONNX model, read only from where the caller said.

A tensor whose ``data_location`` is ``EXTERNAL`` names a file (``location``), an ``offset``
and a ``length``. A model downloaded from a stranger can name any file, so the reader:

* reads nothing unless the caller named a folder (``base_dir``; for a model loaded from a
  path, the model's own folder);
* takes ``location`` as a relative path below that folder: no absolute path, no ``..``, no
  symbolic link resolving outside it;
* opens regular files only (not a FIFO, a device or a folder), without blocking;
* checks ``offset`` and ``length`` against the file's size and the tensor's declared size
  before reading, and reads exactly those bytes.
"""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Iterator

from ..errors import OnnxImportError


def tensors_of(model: Any) -> Iterator[tuple[Any, str]]:
    """Every TensorProto of a model that may hold data (initializers and tensor attributes,
    in subgraphs too), with a phrase naming it."""
    from onnx import AttributeProto

    pending = [model.graph]
    while pending:
        graph = pending.pop()
        for init in graph.initializer:
            yield init, f"initializer {init.name!r}"
        for node in graph.node:
            for a in node.attribute:
                if a.type == AttributeProto.TENSOR:
                    yield a.t, f"attribute {a.name!r} of node {node.name or node.op_type!r}"
                elif a.type == AttributeProto.TENSORS:
                    for t in a.tensors:
                        yield t, f"attribute {a.name!r} of node {node.name or node.op_type!r}"
                elif a.type == AttributeProto.GRAPH:
                    pending.append(a.g)
                elif a.type == AttributeProto.GRAPHS:
                    pending.extend(a.graphs)


def _safe_path(base: Path, location: str, what: str) -> Path:
    relative = PurePosixPath(location.replace("\\", "/"))
    if not location or relative.is_absolute() or ".." in relative.parts or \
            (len(location) > 1 and location[1] == ":"):
        raise OnnxImportError(f"import_onnx: {what} names external data {location!r}: only a "
                              f"relative path below {str(base)!r} is read")
    path = base.joinpath(*relative.parts)
    resolved = path.resolve()
    if resolved != base and base not in resolved.parents:
        raise OnnxImportError(f"import_onnx: {what} names external data {location!r}, which "
                              f"leads outside {str(base)!r} (through a link)")
    return resolved


def open_regular(path: Path, what: str) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (never blocking on a FIFO, never a
    device or a folder); else an error naming ``what``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise OnnxImportError(f"import_onnx: {what}: {str(path)!r} cannot be opened "
                              f"({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OnnxImportError(f"import_onnx: {what}: {str(path)!r} is not a regular file")
    return os.fdopen(fd, "rb")


def _read(path: Path, offset: int, length: int, what: str) -> bytes:
    with open_regular(path, f"{what}: external data") as f:
        size = os.fstat(f.fileno()).st_size
        if offset < 0 or length < 0 or offset + length > size:
            raise OnnxImportError(f"import_onnx: {what}: external data asks for bytes "
                                  f"{offset} to {offset + length} of {str(path)!r}, which "
                                  f"has {size}")
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise OnnxImportError(f"import_onnx: {what}: {str(path)!r} changed while it was read")
    return data


def load_external_data(model: Any, base_dir: str | os.PathLike[str] | None) -> None:
    """Read every external tensor of ``model`` (in place) from below ``base_dir``."""
    from onnx import TensorProto

    from .tensors import element_dtype

    external = [(t, what) for t, what in tensors_of(model)
                if t.data_location == TensorProto.EXTERNAL]
    if not external:
        return
    if base_dir is None:
        raise OnnxImportError(
            f"import_onnx: {external[0][1]} keeps its data in an external file; a model given "
            "as bytes or a ModelProto reads external data only from a folder you name: "
            "import_onnx(model, base_dir=...)")
    base = Path(base_dir).resolve()
    if not base.is_dir():
        raise OnnxImportError(f"import_onnx: base_dir {str(base_dir)!r} is not a folder")
    for tensor, what in external:
        entries = {e.key: e.value for e in tensor.external_data}
        dims = [int(d) for d in tensor.dims]
        if any(d < 0 for d in dims):
            raise OnnxImportError(f"import_onnx: {what} has a negative dimension {dims}")
        expected = math.prod(dims) * element_dtype(tensor.data_type, what).itemsize
        try:
            offset = int(entries.get("offset", 0))
            length = int(entries.get("length", expected))
        except ValueError:
            raise OnnxImportError(f"import_onnx: {what}: external data offset/length are not "
                                  "integers") from None
        if length != expected:
            raise OnnxImportError(f"import_onnx: {what} declares dims {dims} ({expected} "
                                  f"bytes) but its external data is {length} bytes")
        path = _safe_path(base, entries.get("location", ""), what)
        tensor.raw_data = _read(path, offset, length, what)
        tensor.data_location = TensorProto.DEFAULT
        del tensor.external_data[:]
