"""Shared memory for CPU tensors: anonymous files mapped into every process that uses them.

A shared array lives in a :class:`SharedMapping`, an ``mmap`` (``MAP_SHARED``) of an anonymous
in-memory file (``memfd_create`` on Linux; an unlinked temporary file elsewhere). The file has
no name, so nothing is left behind when the processes exit; another process gets it as a file
descriptor (inherited through ``fork``, passed by multiprocessing at ``spawn``, or sent over a
Unix socket by multiprocessing's resource sharer for a ``Queue``), which is PyTorch's default
``file_descriptor`` sharing strategy.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from typing import Any

import numpy as np


class SharedMapping(mmap.mmap):
    """A shared mapping of an anonymous file; ``fd`` stays open, to send it to other
    processes, and is closed when the mapping is freed."""

    fd: int


def _anonymous_file(nbytes: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("pullback-shared", os.MFD_CLOEXEC)
    else:  # macOS and others: an unlinked temporary file is as anonymous
        with tempfile.TemporaryFile() as f:
            fd = os.dup(f.fileno())
    os.ftruncate(fd, nbytes)
    return fd


def attach(fd: int, nbytes: int) -> SharedMapping:
    """Map the shared file ``fd`` (which the mapping now owns) of ``nbytes`` bytes."""
    mapping = SharedMapping(fd, nbytes)
    mapping.fd = fd
    weakref.finalize(mapping, os.close, fd)
    return mapping


def mapping_of(array: Any) -> SharedMapping | None:
    """The shared mapping ``array`` (or the array it is a view of) lives in, or None."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base if isinstance(base, SharedMapping) else None


def share_array(array: np.ndarray) -> np.ndarray:
    """``array`` itself if it is in shared memory, else a C-ordered copy in a new mapping."""
    if mapping_of(array) is not None:
        return array
    nbytes = max(array.nbytes, 1)  # a mapping cannot be empty
    mapping = attach(_anonymous_file(nbytes), nbytes)
    shared = np.ndarray(array.shape, array.dtype, buffer=mapping)
    shared[...] = array
    return shared


def describe(array: np.ndarray) -> tuple[SharedMapping, tuple[Any, ...]]:
    """The mapping of a shared ``array`` and the plain data that finds the array in it:
    (size of the mapping, dtype name, shape, strides, byte offset)."""
    mapping = mapping_of(array)
    if mapping is None:
        raise ValueError("the array is not in shared memory")
    start = np.frombuffer(mapping, np.uint8).__array_interface__["data"][0]
    offset = array.__array_interface__["data"][0] - start
    return mapping, (len(mapping), str(array.dtype), array.shape, array.strides, offset)


def rebuild(fd: int, layout: tuple[Any, ...]) -> np.ndarray:
    """The array :func:`describe` described, mapped from the shared file ``fd``."""
    from ..dtypes import to_dtype

    nbytes, dtype, shape, strides, offset = layout
    return np.ndarray(tuple(shape), to_dtype(dtype), buffer=attach(fd, nbytes), offset=offset,
                      strides=tuple(strides))
