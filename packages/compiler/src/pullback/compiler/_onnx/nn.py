"""The ``"onnx"`` rules of nn's fused ops: ``nn.linear`` (Gemm for a 2-d input, else MatMul and
Add), the 2-d and 3-d convolutions (Conv) and their input adjoints, the transposed convolutions
(ConvTranspose), max and average pooling, ``nn.cross_entropy`` (SoftmaxCrossEntropyLoss),
``nn.layer_norm`` (LayerNormalization), softmax and log-softmax, and
``nn.scaled_dot_product_attention`` written out (MatMul, scale, mask, Softmax, MatMul), as
``torch.onnx.export`` writes it at opset 17.

Padding is one ``(before, after)`` pair per spatial axis in pullback's graphs; ceil mode is
already an extra pad after. ONNX's AveragePool without the padding counted is the mean over the
valid taps; a table scales it where pullback divides by something else (``count_include_pad``,
``divisor_override``).
"""

from __future__ import annotations

import numpy as np

from pullback.registry import get_op

from .._ir import Node, Value
from .builder import OnnxBuilder
from .elementwise import OnnxRule


def _linear(node: Node, b: OnnxBuilder) -> None:
    x, weight = node.inputs[:2]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    out = node.output
    if x.ndim == 2:
        inputs = [b.name(x), b.name(weight)] + ([b.name(bias)] if isinstance(bias, Value) else [])
        b.emit("Gemm", inputs, [b.output(out)], transB=1)
        return
    if weight in b.graph.constants:  # y = x W^T: store W^T, as torch's exporter does
        hint = b.graph.constant_names.get(weight, f"c{weight.id}") + ".T"
        w_t = b.initializer(np.ascontiguousarray(np.asarray(b.graph.constants[weight]).T),
                            hint)
    else:
        w_t = b.emit("Transpose", [b.name(weight)], perm=[1, 0])
    if not isinstance(bias, Value):
        b.emit("MatMul", [b.name(x), w_t], [b.output(out)])
        return
    b.emit("Add", [b.emit("MatMul", [b.name(x), w_t]), b.name(bias)], [b.output(out)])


def _pads(padding: tuple[tuple[int, int], ...]) -> list[int]:
    return [int(p[0]) for p in padding] + [int(p[1]) for p in padding]


def _conv(node: Node, b: OnnxBuilder) -> None:
    """``nn.conv2d`` and ``nn.conv3d`` (the 1-d convolutions are 2-d ones of height 1)."""
    x, weight = node.inputs[:2]
    bias = node.inputs[2] if len(node.inputs) > 2 else None
    attrs = node.attrs
    inputs = [b.name(x), b.name(weight)] + ([b.name(bias)] if isinstance(bias, Value) else [])
    b.emit("Conv", inputs, [b.output(node.output)], kernel_shape=list(weight.shape[2:]),
           strides=list(attrs["stride"]), pads=_pads(attrs["padding"]),
           dilations=list(attrs["dilation"]), group=int(attrs.get("groups", 1)))


def _conv_transpose(node: Node, b: OnnxBuilder) -> None:
    """``nn.conv2d_input_grad(g, w)``, the transposed convolution: ConvTranspose of ``g`` with
    the same weight (its layout, (in, out / groups, *kernel), is ConvTranspose's). The input
    size it rebuilds may exceed what the windows reach by up to ``stride - 1``
    (``output_padding``)."""
    g, weight = node.inputs[:2]
    attrs = node.attrs
    kernel, stride, dilation = weight.shape[2:], attrs["stride"], attrs["dilation"]
    spatial = node.output.shape[2:]
    reached = [s * (n - 1) + d * (k - 1) + 1 - lo - hi for s, n, d, k, (lo, hi)
               in zip(stride, g.shape[2:], dilation, kernel, attrs["padding"])]
    b.emit("ConvTranspose", [b.name(g), b.name(weight)], [b.output(node.output)],
           kernel_shape=list(kernel), strides=list(stride), pads=_pads(attrs["padding"]),
           dilations=list(dilation), group=int(attrs.get("groups", 1)),
           output_padding=[int(size - r) for size, r in zip(spatial, reached)])


def _max_pool(node: Node, b: OnnxBuilder) -> None:
    attrs = node.attrs
    rank = len(attrs["kernel_size"])
    b.emit("MaxPool", [b.name(node.inputs[0])], [b.output(node.output)],
           kernel_shape=list(attrs["kernel_size"]), strides=list(attrs["stride"]),
           pads=_pads(attrs["padding"]), dilations=list(attrs.get("dilation", (1,) * rank)))


def _avg_pool(node: Node, b: OnnxBuilder) -> None:
    """AveragePool without the padding counted (the mean over the taps inside the input),
    scaled where pullback divides by something else (``count_include_pad``,
    ``divisor_override``): the scale is what the op's kernel makes of an input of ones."""
    attrs = node.attrs
    x = node.inputs[0]
    ones = np.ones((1, 1) + x.shape[2:], np.float64)
    scale = np.asarray(get_op(node.op).kernel_for("cpu")(ones, **attrs))[0, 0]
    mean = b.emit("AveragePool", [b.name(x)], kernel_shape=list(attrs["kernel_size"]),
                  strides=list(attrs["stride"]), pads=_pads(attrs["padding"]),
                  count_include_pad=0)
    if np.all(scale == 1.0):
        b.emit("Identity", [mean], [b.output(node.output)])
        return
    b.emit("Mul", [mean, b.constant(scale.astype(node.output.dtype), "pool_scale")],
           [b.output(node.output)])


def _cross_entropy(node: Node, b: OnnxBuilder) -> None:
    """Per-row ``-log_softmax(logits)[target]``, 0 where the target is ``ignore_index``: ONNX's
    SoftmaxCrossEntropyLoss without reduction."""
    logits, target = node.inputs[:2]
    b.emit("SoftmaxCrossEntropyLoss", [b.name(logits), b.operand(target, np.int64)],
           [b.output(node.output)], reduction="none",
           ignore_index=int(node.attrs["ignore_index"]))


def _layer_norm(node: Node, b: OnnxBuilder) -> None:
    x, weight, bias = node.inputs[:3]
    n = node.attrs["normalized_ndim"]
    scale = b.name(weight) if isinstance(weight, Value) else \
        b.constant(np.ones(x.shape[x.ndim - n:], x.dtype), "layer_norm.ones")
    inputs = [b.name(x), scale] + ([b.name(bias)] if isinstance(bias, Value) else [])
    b.emit("LayerNormalization", inputs, [b.output(node.output)], axis=-n,
           epsilon=float(node.attrs["eps"]))


def _softmax(node: Node, b: OnnxBuilder) -> None:
    op_type = "Softmax" if node.op == "nn.softmax" else "LogSoftmax"
    b.emit(op_type, [b.name(node.inputs[0])], [b.output(node.output)],
           axis=int(node.attrs["axis"]))


def _attention(node: Node, b: OnnxBuilder) -> None:
    """``softmax(q k^T * scale + bias + causal mask) @ v``; the causal mask lets query ``i``
    see keys ``0..i`` (top-left aligned, as pullback's kernel)."""
    q, key, value, bias, keep = (list(node.inputs) + [None, None])[:5]
    if isinstance(keep, Value):
        raise b.fail("a dropout mask cannot be exported (export in eval mode)")
    dtype = node.output.dtype
    perm = list(range(key.ndim))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    key_t = b.emit("Transpose", [b.name(key)], perm=perm)
    scores = b.emit("Mul", [b.emit("MatMul", [b.name(q), key_t]),
                            b.scalar(node.attrs["scale"], dtype)])
    if isinstance(bias, Value):
        if bias.dtype.kind != "f":
            raise b.fail(f"a {bias.dtype} mask (an additive float mask is exported)")
        scores = b.emit("Add", [scores, b.operand(bias, dtype)])
    if node.attrs.get("causal", False):
        length, keys = q.shape[-2], key.shape[-2]
        hidden = np.triu(np.ones((length, keys), bool), k=1)
        mask = np.where(hidden, -np.inf, 0.0).astype(dtype)
        scores = b.emit("Add", [scores, b.constant(mask, "causal_mask")])
    weights = b.emit("Softmax", [scores], axis=-1)
    b.emit("MatMul", [weights, b.name(value)], [b.output(node.output)])


NN_RULES: dict[str, OnnxRule] = {
    "nn.linear": _linear, "nn.conv2d": _conv, "nn.conv3d": _conv,
    "nn.conv2d_input_grad": _conv_transpose, "nn.conv3d_input_grad": _conv_transpose,
    "nn.max_pool2d": _max_pool, "nn.max_pool3d": _max_pool, "nn.avg_pool2d": _avg_pool,
    "nn.avg_pool3d": _avg_pool, "nn.cross_entropy": _cross_entropy,
    "nn.layer_norm": _layer_norm, "nn.softmax": _softmax, "nn.log_softmax": _softmax,
    "nn.scaled_dot_product_attention": _attention,
}
