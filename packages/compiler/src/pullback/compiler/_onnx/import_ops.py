"""What each ONNX operator is in pullback, for :func:`pullback.compiler.import_onnx`: a function
of the node's input Tensors (None for an omitted optional input), its attributes and the model's
opset, returning its output Tensors. Every one is written with pullback's differentiable ops,
so an imported model trains.

Shape arithmetic (``Shape``, ``Gather`` of a size, ``Concat`` of sizes, as ``torch.onnx.export``
writes a ``reshape``) runs on small int64 Tensors; an operator that takes sizes (``Reshape``,
``Slice``, ``Expand``...) reads them back as Python ints. Integer ``Div`` truncates, as ONNX
says. The operators whose inputs moved from attributes to inputs across opsets (``Squeeze``,
``Unsqueeze``, ``Split``, ``Clip``, the reductions) read either.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from pullback.tensor import Tensor

Inputs = list[Any]
ImportOp = Callable[[Inputs, dict[str, Any], int], Sequence[Any]]


def _ints(t: Any) -> list[int]:
    array = t.detach().numpy() if isinstance(t, Tensor) else t
    return [int(v) for v in np.asarray(array).reshape(-1)]


def _unary(fn: Callable[[Any], Any]) -> ImportOp:
    return lambda ins, attrs, opset: [fn(ins[0])]


def _binary(fn: Callable[[Any, Any], Any]) -> ImportOp:
    return lambda ins, attrs, opset: [fn(ins[0], ins[1])]


def _div(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    a, b = ins
    if a.dtype.kind in "iu" and b.dtype.kind in "iu":  # ONNX truncates; sizes are positive
        return [pb.floor_divide(a, b)]
    return [a / b]


def _gemm(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    a, b, c = (ins + [None])[:3]
    a = a.transpose(0, 1) if attrs.get("transA", 0) else a
    b = b.transpose(0, 1) if attrs.get("transB", 0) else b
    y = a @ b
    if attrs.get("alpha", 1.0) != 1.0:
        y = y * attrs["alpha"]
    if c is not None:
        y = y + (c * attrs["beta"] if attrs.get("beta", 1.0) != 1.0 else c)
    return [y]


def _pairs(attrs: dict[str, Any], key: str, n: int, default: int) -> list[int]:
    return list(attrs.get(key, [default] * n))


def _split_pads(pads: list[int]) -> tuple[list[int], list[int]]:
    half = len(pads) // 2
    return pads[:half], pads[half:]


def _torch_pad(begin: list[int], end: list[int]) -> list[int]:
    """ONNX's ``[x1_begin, x2_begin, ..., x1_end, x2_end]`` as F.pad's last-axis-first list."""
    out: list[int] = []
    for b, e in zip(reversed(begin), reversed(end)):
        out += [b, e]
    return out


def _auto_pad(attrs: dict[str, Any], spatial: int) -> list[int]:
    if attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID", b"NOTSET", b"VALID"):
        raise NotImplementedError("auto_pad SAME_UPPER/SAME_LOWER")
    return _pairs(attrs, "pads", 2 * spatial, 0)


def _conv(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x, w, b = (ins + [None])[:3]
    spatial = x.ndim - 2
    begin, end = _split_pads(_auto_pad(attrs, spatial))
    conv = {1: F.conv1d, 2: F.conv2d}.get(spatial)
    if conv is None:
        raise NotImplementedError(f"Conv over {spatial} spatial axes")
    padding: Any = begin
    if begin != end:
        x, padding = F.pad(x, _torch_pad(begin, end)), 0
    return [conv(x, w, b, stride=_pairs(attrs, "strides", spatial, 1), padding=padding,
                 dilation=_pairs(attrs, "dilations", spatial, 1),
                 groups=int(attrs.get("group", 1)))]


def _pool_geometry(x: Any, attrs: dict[str, Any]) -> tuple[list[int], list[int], list[int],
                                                            list[int]]:
    if x.ndim != 4:
        raise NotImplementedError(f"pooling over {x.ndim - 2} spatial axes")
    kernel = list(attrs["kernel_shape"])
    begin, end = _split_pads(_auto_pad(attrs, 2))
    return kernel, _pairs(attrs, "strides", 2, 1), begin, end


def _max_pool(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x = ins[0]
    kernel, strides, begin, end = _pool_geometry(x, attrs)
    if begin != [0, 0] or end != [0, 0]:  # padding never wins a max
        x = F.pad(x, _torch_pad(begin, end), value=float("-inf"))
    return [F.max_pool2d(x, kernel, strides, dilation=_pairs(attrs, "dilations", 2, 1),
                         ceil_mode=bool(attrs.get("ceil_mode", 0)))]


def _average_pool(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    """The window's sum over how many of its elements count (the padding, when
    ``count_include_pad``, else only the input's): both pooled sums (``divisor_override=1``)."""
    x = ins[0]
    kernel, strides, begin, end = _pool_geometry(x, attrs)
    ceil = bool(attrs.get("ceil_mode", 0))
    pads = _torch_pad(begin, end)
    ones = pb.ones((1, 1) + tuple(x.shape[2:]), dtype=x.dtype)
    if attrs.get("count_include_pad", 0):
        ones = F.pad(ones, pads, value=1.0)
    else:
        ones = F.pad(ones, pads)
    total = F.avg_pool2d(F.pad(x, pads), kernel, strides, ceil_mode=ceil, divisor_override=1)
    count = F.avg_pool2d(ones, kernel, strides, ceil_mode=ceil, divisor_override=1)
    return [total / count]


def _axes(ins: Inputs, attrs: dict[str, Any], position: int) -> list[int] | None:
    if "axes" in attrs:
        return list(attrs["axes"])
    if len(ins) > position and ins[position] is not None:
        return _ints(ins[position])
    return None


def _squeeze(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x, axes = ins[0], _axes(ins, attrs, 1)
    axes = [a for a in range(x.ndim) if x.shape[a] == 1] if axes is None else \
        [a % x.ndim for a in axes]
    return [x.reshape(tuple(s for d, s in enumerate(x.shape) if d not in axes))]


def _unsqueeze(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x, axes = ins[0], _axes(ins, attrs, 1) or []
    ndim = x.ndim + len(axes)
    shape, source = [], iter(x.shape)
    wanted = {a % ndim for a in axes}
    for d in range(ndim):
        shape.append(1 if d in wanted else next(source))
    return [x.reshape(tuple(shape))]


def _reshape(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x, shape = ins[0], _ints(ins[1])
    if not attrs.get("allowzero", 0):  # 0 copies the input's size
        shape = [x.shape[d] if s == 0 else s for d, s in enumerate(shape)]
    return [x.reshape(tuple(shape))]


def _flatten(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x = ins[0]
    axis = int(attrs.get("axis", 1)) % max(x.ndim, 1)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    return [x.reshape((outer, -1))]


def _transpose(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x = ins[0]
    perm = attrs.get("perm", list(range(x.ndim))[::-1])
    return [x.permute(*perm)]


def _slice(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x = ins[0]
    starts, ends = _ints(ins[1]), _ints(ins[2])
    axes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
    steps = _ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    key = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        size = x.shape[axis]
        start = min(max(start + size if start < 0 else start, 0), size - (step < 0))
        end = end + size if end < 0 else end
        end = min(max(end, -1), size) if step < 0 else min(max(end, 0), size)
        key[axis % x.ndim] = slice(start, None if end < 0 else end, step)
    return [x[tuple(key)]]


def _gather(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x, indices = ins
    axis = int(attrs.get("axis", 0)) % x.ndim
    indices = pb.where(indices < 0, indices + x.shape[axis], indices)
    key = (slice(None),) * axis
    if indices.ndim == 0:
        return [x[key + (int(indices.item()),)]]
    return [x[key + (indices,)]]


def _concat(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    return [pb.cat([t for t in ins if t is not None], axis=int(attrs["axis"]))]


def _split(ins: Inputs, attrs: dict[str, Any], opset: int, outputs: int = 0) -> list[Any]:
    x = ins[0]
    axis = int(attrs.get("axis", 0)) % x.ndim
    sizes = attrs.get("split")
    if sizes is None and len(ins) > 1 and ins[1] is not None:
        sizes = _ints(ins[1])
    if sizes is None:
        count = outputs or int(attrs.get("num_outputs", 1))
        step = -(-x.shape[axis] // count)
        sizes = [min(step, x.shape[axis] - i * step) for i in range(count)]
    parts, start = [], 0
    for size in sizes:
        key = (slice(None),) * axis + (slice(start, start + size),)
        parts.append(x[key])
        start += size
    return parts


def _shape(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    shape = list(ins[0].shape)
    shape = shape[attrs.get("start", 0):attrs.get("end", len(shape))]
    return [pb.tensor(np.asarray(shape, np.int64))]


def _cast(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    from onnx import helper

    return [ins[0].to(np.dtype(helper.tensor_dtype_to_np_dtype(attrs["to"])))]


def _clip(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x = ins[0]
    low = ins[1] if len(ins) > 1 and ins[1] is not None else attrs.get("min")
    high = ins[2] if len(ins) > 2 and ins[2] is not None else attrs.get("max")
    low = low.item() if isinstance(low, Tensor) else low
    high = high.item() if isinstance(high, Tensor) else high
    return [pb.clamp(x, low, high)]


def _layer_norm(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x, scale, bias = (ins + [None])[:3]
    axis = int(attrs.get("axis", -1)) % x.ndim
    return [F.layer_norm(x, tuple(x.shape[axis:]), scale, bias, float(attrs.get("epsilon", 1e-5)))]


def _softmax(fn: Callable[..., Any]) -> ImportOp:
    def op(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
        x = ins[0]
        axis = int(attrs.get("axis", -1 if opset >= 13 else 1))
        if opset < 13 and axis % x.ndim != x.ndim - 1:  # the old coerce-to-2-d semantics
            raise NotImplementedError(f"softmax over axis {axis} before opset 13")
        return [fn(x, dim=axis)]
    return op


def _reduce(name: str) -> ImportOp:
    def op(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
        x, axes = ins[0], _axes(ins, attrs, 1)
        keep = bool(attrs.get("keepdims", 1))
        if axes is None or not axes:
            if attrs.get("noop_with_empty_axes", 0):
                return [x]
            axes = list(range(x.ndim))
        return [getattr(x, name)(axis=tuple(a % x.ndim for a in axes), keepdims=keep)]
    return op


def _expand(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x, shape = ins[0], _ints(ins[1])
    return [pb.broadcast_to(x, np.broadcast_shapes(tuple(x.shape), tuple(shape)))]


def _trilu(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    k = int(ins[1].item()) if len(ins) > 1 and ins[1] is not None else 0
    return [(pb.triu if attrs.get("upper", 1) else pb.tril)(ins[0], k)]


def _pad(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    x = ins[0]
    mode = attrs.get("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    if mode != "constant" or (len(ins) > 3 and ins[3] is not None):
        raise NotImplementedError(f"Pad mode {mode!r} or with axes")
    begin, end = _split_pads(_ints(ins[1]) if len(ins) > 1 else list(attrs["pads"]))
    value = float(ins[2].item()) if len(ins) > 2 and ins[2] is not None else \
        float(attrs.get("value", 0.0))
    return [F.pad(x, _torch_pad(begin, end), value=value)]


def _where(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    return [pb.where(*ins)]


def _batch_norm(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    """Inference form (running statistics); ``training_mode`` is refused."""
    if attrs.get("training_mode", 0):
        raise NotImplementedError("BatchNormalization with training_mode=1")
    x, scale, bias, mean, var = ins[:5]
    return [F.batch_norm(x, mean, var, scale, bias, training=False,
                         eps=float(attrs.get("epsilon", 1e-5)))]


def _hard_sigmoid(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    alpha, beta = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))
    return [pb.clamp(ins[0] * alpha + beta, 0.0, 1.0)]


def _selu(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    alpha = float(attrs.get("alpha", 1.67326319217681884765625))
    gamma = float(attrs.get("gamma", 1.05070102214813232421875))
    return [F.elu(ins[0], alpha) * gamma]


def _dropout(ins: Inputs, attrs: dict[str, Any], opset: int) -> list[Any]:
    """Inference: the input, and a mask of ones."""
    if len(ins) > 2 and ins[2] is not None and bool(ins[2].item()):
        raise NotImplementedError("Dropout with training_mode=True")
    return [ins[0], pb.ones(tuple(ins[0].shape), dtype=np.bool_)]


# the inputs of these operators that are statistics, not weights (import_onnx keeps them fixed)
FIXED_INPUTS = {"BatchNormalization": (3, 4)}


IMPORT_OPS: dict[str, ImportOp] = {
    "Add": _binary(lambda a, b: a + b), "Sub": _binary(lambda a, b: a - b),
    "Mul": _binary(lambda a, b: a * b), "Div": _div, "Pow": _binary(lambda a, b: a ** b),
    "Max": lambda ins, a, o: [pb.maximum(*ins)] if len(ins) == 2 else [ins[0]],
    "Min": lambda ins, a, o: [pb.minimum(*ins)] if len(ins) == 2 else [ins[0]],
    "MatMul": _binary(lambda a, b: a @ b), "Gemm": _gemm,
    "Relu": _unary(pb.relu), "Tanh": _unary(pb.tanh), "Sigmoid": _unary(pb.sigmoid),
    "Exp": _unary(pb.exp), "Log": _unary(pb.log), "Sqrt": _unary(pb.sqrt),
    "Erf": _unary(pb.erf), "Abs": _unary(pb.abs), "Neg": _unary(lambda x: -x),
    "Reciprocal": _unary(pb.reciprocal), "Floor": _unary(pb.floor), "Ceil": _unary(pb.ceil),
    "Round": _unary(pb.round), "Sign": _unary(pb.sign), "Sin": _unary(pb.sin),
    "Cos": _unary(pb.cos), "Identity": _unary(lambda x: x), "IsNaN": _unary(pb.isnan),
    "IsInf": _unary(pb.isinf), "Not": _unary(pb.logical_not),
    "And": _binary(pb.logical_and), "Or": _binary(pb.logical_or),
    "Xor": _binary(pb.logical_xor), "Equal": _binary(lambda a, b: a == b),
    "Greater": _binary(lambda a, b: a > b), "Less": _binary(lambda a, b: a < b),
    "GreaterOrEqual": _binary(lambda a, b: a >= b), "LessOrEqual": _binary(lambda a, b: a <= b),
    "Where": _where, "Clip": _clip,
    "LeakyRelu": lambda ins, a, o: [F.leaky_relu(ins[0], float(a.get("alpha", 0.01)))],
    "Conv": _conv, "MaxPool": _max_pool, "AveragePool": _average_pool,
    "LayerNormalization": _layer_norm, "Softmax": _softmax(F.softmax),
    "LogSoftmax": _softmax(F.log_softmax), "Flatten": _flatten, "Reshape": _reshape,
    "Transpose": _transpose, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Slice": _slice,
    "Gather": _gather, "Concat": _concat, "Split": _split, "Shape": _shape, "Cast": _cast,
    "Expand": _expand, "Trilu": _trilu, "Pad": _pad,
    "ReduceSum": _reduce("sum"), "ReduceMean": _reduce("mean"), "ReduceMax": _reduce("amax"),
    "ReduceMin": _reduce("amin"), "BatchNormalization": _batch_norm,
    "Dropout": _dropout, "Gelu": lambda ins, a, o: [F.gelu(ins[0], a.get("approximate", "none"))],
    "Elu": lambda ins, a, o: [F.elu(ins[0], float(a.get("alpha", 1.0)))],
    "Selu": _selu, "HardSigmoid": _hard_sigmoid,
    "HardSwish": lambda ins, a, o: [ins[0] * _hard_sigmoid([ins[0]], {"alpha": 1 / 6}, o)[0]],
    "Softplus": lambda ins, a, o: [F.softplus(ins[0])],
}
