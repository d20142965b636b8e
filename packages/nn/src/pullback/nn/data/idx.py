"""Reading IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or not.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of dimensions),
one big-endian uint32 per dimension, then the values in C order, big-endian.
"""

from __future__ import annotations

import gzip
import os

import numpy as np

_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
          0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array stored in an IDX file (``.gz`` files are decompressed).

    Raises:
        ValueError: the file is not a well-formed IDX file (the message names it).
    """
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"read_idx({path!r}): cannot read the file ({exc})") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _TYPES:
        raise ValueError(f"read_idx({path!r}): not an IDX file (bad magic number "
                         f"{data[:4].hex()})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"read_idx({path!r}): truncated header")
    shape = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_TYPES[data[2]])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - header != expected:
        raise ValueError(f"read_idx({path!r}): expected {expected} bytes of data for shape "
                         f"{shape}, found {len(data) - header}")
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))
