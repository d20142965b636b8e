"""ONNX TensorProtos read into Tensors, checked first: the element type is one a Tensor holds,
no dimension is negative, and the data holds exactly as many elements as the dimensions say
(so a declared ``2**40`` elements with a few bytes of data is refused before anything is
allocated). External data is read beforehand by :mod:`.external_data`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import pullback as pb
from pullback.tensor import Tensor

from ..errors import OnnxImportError

# the typed field that holds each element type's values when raw_data is empty
_FIELDS = {1: "float_data", 2: "int32_data", 3: "int32_data", 4: "int32_data",
           5: "int32_data", 6: "int32_data", 7: "int64_data", 9: "int32_data",
           10: "int32_data", 11: "double_data", 12: "uint64_data", 13: "uint64_data",
           16: "int32_data"}


def element_dtype(code: int, what: str) -> np.dtype:
    """The NumPy dtype of an ONNX element type that a Tensor can hold, else an error naming
    ``what``."""
    from .import_ops.elementwise import onnx_dtype

    try:
        return onnx_dtype(code)
    except NotImplementedError as exc:
        raise OnnxImportError(f"import_onnx: {what} has {exc}, which a pullback Tensor does "
                              "not hold") from None


def check_tensor(proto: Any, what: str) -> tuple[np.dtype, tuple[int, ...]]:
    """The dtype and shape of ``proto``, after checking that its data matches them."""
    from onnx import TensorProto

    dims = tuple(int(d) for d in proto.dims)
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"import_onnx: {what} has a negative dimension {list(dims)}")
    if proto.data_location == TensorProto.EXTERNAL:
        raise OnnxImportError(f"import_onnx: {what} keeps its data in an external file that "
                              "was not read (pass base_dir=)")
    if proto.HasField("segment"):
        raise OnnxImportError(f"import_onnx: {what} is a segment of a tensor (not supported)")
    dtype = element_dtype(proto.data_type, what)
    count = math.prod(dims)
    if proto.raw_data:
        if len(proto.raw_data) != count * dtype.itemsize:
            raise OnnxImportError(
                f"import_onnx: {what} declares dims {list(dims)} of {dtype} "
                f"({count * dtype.itemsize} bytes) but holds {len(proto.raw_data)} bytes")
    else:
        held = len(getattr(proto, _FIELDS.get(proto.data_type, "int32_data")))
        if dtype.name in ("float16", "bfloat16"):
            held = len(proto.int32_data)
        if held != count:
            raise OnnxImportError(f"import_onnx: {what} declares dims {list(dims)} "
                                  f"({count} elements) but holds {held}")
    return dtype, dims


def array_from_proto(proto: Any, what: str | None = None) -> np.ndarray:
    """A TensorProto's values as a NumPy array, checked."""
    from onnx import numpy_helper

    what = what or f"tensor {proto.name!r}"
    dtype, dims = check_tensor(proto, what)
    try:
        return np.array(numpy_helper.to_array(proto)).astype(dtype, copy=False).reshape(dims)
    except Exception as exc:  # noqa: BLE001  (onnx's own reader failing on a bad tensor)
        raise OnnxImportError(f"import_onnx: {what} cannot be read ({exc})") from None


def tensor_from_proto(proto: Any, what: str | None = None) -> Tensor:
    """A TensorProto as a (constant) Tensor, checked."""
    return pb.tensor(array_from_proto(proto, what))
