"""ONNX operators that the importer once computed wrongly without an error, each checked
against onnxruntime on a one-node model: Max/Min of three inputs, IsInf's detect_* flags,
integer Div (truncation), AveragePool's shape with dilations and ceil_mode, Pow's result type,
Constant's value_* forms, Clip without bounds, and the optional outputs (LayerNormalization's
Mean and InvStdDev, MaxPool's Indices)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import import_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402

F32, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64


def one_node(op, inputs, outputs, opset=18, **attrs):
    """A model of one node; ``inputs``/``outputs`` are (name, elem_type, shape) triples."""
    node = helper.make_node(op, [n for n, _, _ in inputs], [n for n, _, _ in outputs], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def assert_like_onnxruntime(model, *arrays):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})
    with pb.no_grad():
        got = import_onnx(model)(*arrays)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        g = g.detach().numpy()
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, g.shape, e.dtype, e.shape)
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


rng = np.random.default_rng(0)


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
def test_variadic_ops_use_every_input(op):
    model = one_node(op, [("a", F32, [3]), ("b", F32, [2, 3]), ("c", F32, [1])],
                     [("y", F32, [2, 3])])
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((3,), (2, 3), (1,)))
    assert_like_onnxruntime(model, a, b, c)


@pytest.mark.parametrize("positive,negative", [(1, 0), (0, 1), (1, 1), (0, 0)])
def test_is_inf_detects_the_sides_asked(positive, negative):
    model = one_node("IsInf", [("x", F32, [4])], [("y", TensorProto.BOOL, [4])],
                     detect_positive=positive, detect_negative=negative)
    assert_like_onnxruntime(model, np.array([np.inf, -np.inf, 1.0, np.nan], np.float32))


@pytest.mark.parametrize("elem,dtype", [(I32, np.int32), (I64, np.int64)])
def test_integer_div_truncates_toward_zero(elem, dtype):
    model = one_node("Div", [("a", elem, [4]), ("b", elem, [4])], [("y", elem, [4])])
    assert_like_onnxruntime(model, np.array([-7, 7, -7, 7], dtype), np.array([2, 2, -2, -2], dtype))


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2], "dilations": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
     "count_include_pad": 1},
    {"kernel_shape": [2, 2], "dilations": [2, 1], "pads": [0, 1, 1, 0]},
], ids=["dilations", "ceil_mode", "ceil_mode_padded", "dilations_asymmetric_pads"])
def test_average_pool_shape_with_dilations_and_ceil_mode(attrs):
    model = one_node("AveragePool", [("x", F32, [1, 2, 7, 6])], [("y", F32, None)], opset=19,
                     **attrs)
    assert_like_onnxruntime(model, rng.standard_normal((1, 2, 7, 6)).astype(np.float32))


def test_pow_of_an_integer_base_keeps_its_type():
    model = one_node("Pow", [("a", I32, [3]), ("b", F32, [3])], [("y", I32, [3])], opset=15)
    assert_like_onnxruntime(model, np.array([2, 3, 4], np.int32),
                            np.array([2.0, 0.5, 3.0], np.float32))


@pytest.mark.parametrize("attr,value", [("value_float", 2.5), ("value_floats", [1.0, 2.0]),
                                        ("value_int", 7), ("value_ints", [3, 4, 5])])
def test_constant_value_forms(attr, value):
    node = helper.make_node("Constant", [], ["c"], **{attr: value})
    out = helper.make_node("Identity", ["c"], ["y"])
    graph = helper.make_graph([node, out], "g", [], [helper.make_tensor_value_info(
        "y", F32 if "float" in attr else I64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    assert_like_onnxruntime(model)


@pytest.mark.parametrize("bounds", [[], ["lo"], ["", "hi"]], ids=["none", "min", "max"])
def test_clip_with_missing_bounds(bounds):
    inputs = [("x", F32, [5])] + [(b, F32, []) for b in bounds if b]
    node = helper.make_node("Clip", ["x"] + bounds, ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info("y", F32, [5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = np.array([-3, -1, 0, 1, 3], np.float32)
    assert_like_onnxruntime(model, x, *[np.array(-1.5 if b == "lo" else 2.0, np.float32)
                                        for b in bounds if b])


def test_layer_norm_mean_and_inv_std_dev_outputs():
    model = one_node("LayerNormalization", [("x", F32, [2, 3, 4]), ("s", F32, [3, 4]),
                                            ("b", F32, [3, 4])],
                     [("y", F32, None), ("mean", F32, None), ("inv", F32, None)], opset=17,
                     axis=1)
    x, s, b = (rng.standard_normal(shape).astype(np.float32)
               for shape in ((2, 3, 4), (3, 4), (3, 4)))
    assert_like_onnxruntime(model, x, s, b)


@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [2, 2], "storage_order": 1},
], ids=["plain", "padded", "column_major"])
def test_max_pool_indices_output(attrs):
    model = one_node("MaxPool", [("x", F32, [2, 3, 5, 6])],
                     [("y", F32, None), ("i", I64, None)], opset=12, **attrs)
    assert_like_onnxruntime(model, rng.standard_normal((2, 3, 5, 6)).astype(np.float32))
