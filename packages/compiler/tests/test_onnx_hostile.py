"""ONNX files from strangers: external data is read only below the folder the caller names,
crafted graphs are one OnnxImportError naming the node or tensor, and a short fuzz of the
loader (tools/onnx_fuzz.py) finds no untyped exception, crash or hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import OnnxImportError, import_onnx

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
F32 = TensorProto.FLOAT


def _add_weight_model(weight: TensorProto) -> onnx.ModelProto:
    """y = x + w, with ``w`` the given initializer."""
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", F32, [4])],
                              [helper.make_tensor_value_info("y", F32, [4])],
                              initializer=[weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _external(location: str, offset: int = 0, length: int = 16, dims=(4,)) -> TensorProto:
    t = TensorProto(name="w", data_type=F32, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", str(offset)),
                       ("length", str(length))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


WEIGHTS = np.arange(4, dtype=np.float32)


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "weights.bin").write_bytes(WEIGHTS.tobytes())
    return tmp_path


def test_bytes_with_external_data_and_no_base_dir_are_refused(folder, monkeypatch):
    # before: the location was read relative to the working directory
    monkeypatch.chdir(folder)
    model = _add_weight_model(_external("weights.bin"))
    with pytest.raises(OnnxImportError, match="base_dir"):
        import_onnx(model.SerializeToString())
    with pytest.raises(OnnxImportError, match="base_dir"):
        import_onnx(model)


def test_external_data_below_base_dir_is_read(folder):
    model = _add_weight_model(_external("weights.bin"))
    net = import_onnx(model, base_dir=folder)
    np.testing.assert_array_equal(net(np.ones(4, np.float32)).detach().numpy(), WEIGHTS + 1)
    assert model.graph.initializer[0].data_location == TensorProto.EXTERNAL  # not changed


def test_a_model_file_reads_external_data_beside_it(folder, tmp_path_factory, monkeypatch):
    onnx.save(_add_weight_model(_external("weights.bin")), str(folder / "m.onnx"))
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    np.testing.assert_array_equal(import_onnx(folder / "m.onnx")(np.zeros(4, np.float32))
                                  .detach().numpy(), WEIGHTS)


@pytest.mark.parametrize("location", ["../weights.bin", "/etc/passwd", "sub/../../x",
                                      "C:\\\\x", ""])
def test_locations_outside_base_dir_are_refused(folder, location):
    base = folder / "base"
    base.mkdir()
    with pytest.raises(OnnxImportError, match="external data"):
        import_onnx(_add_weight_model(_external(location)), base_dir=base)


def test_a_symlink_leading_outside_base_dir_is_refused(folder):
    base = folder / "base"
    base.mkdir()
    (base / "link.bin").symlink_to(folder / "weights.bin")
    with pytest.raises(OnnxImportError, match="outside"):
        import_onnx(_add_weight_model(_external("link.bin")), base_dir=base)


def test_special_files_are_not_read(folder):
    os.mkfifo(folder / "fifo.bin")
    with pytest.raises(OnnxImportError, match="not a regular file"):
        import_onnx(_add_weight_model(_external("fifo.bin")), base_dir=folder)
    (folder / "dir.bin").mkdir()
    with pytest.raises(OnnxImportError):
        import_onnx(_add_weight_model(_external("dir.bin")), base_dir=folder)
    os.mkfifo(folder / "model.onnx")
    with pytest.raises(OnnxImportError, match="not a regular file"):
        import_onnx(folder / "model.onnx")


@pytest.mark.parametrize("offset,length,dims", [(8, 16, (4,)), (0, 12, (4,)),
                                                (0, 16, (2 ** 40,)), (-4, 16, (4,))],
                         ids=["past_the_end", "short", "huge_dims", "negative_offset"])
def test_external_sizes_are_checked_before_reading(folder, offset, length, dims):
    with pytest.raises(OnnxImportError, match="'w'"):
        import_onnx(_add_weight_model(_external("weights.bin", offset, length, dims)),
                    base_dir=folder)


def _graph(nodes, inputs=("x",), outputs=("y",), initializers=()):
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(i, F32, [2])
                                           for i in inputs],
                              [helper.make_tensor_value_info(o, F32, [2]) for o in outputs],
                              initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_cycle_is_refused_naming_a_node():
    model = _graph([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                    helper.make_node("Relu", ["a"], ["b"], name="second"),
                    helper.make_node("Identity", ["a"], ["y"])])
    with pytest.raises(OnnxImportError, match="cycle through node '(first|second)'"):
        import_onnx(model)


def test_unsorted_nodes_are_sorted_as_onnxruntime_does():
    ort = pytest.importorskip("onnxruntime")
    model = _graph([helper.make_node("Relu", ["a"], ["y"]),
                    helper.make_node("Neg", ["x"], ["a"])])
    x = np.array([1.0, -2.0], np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(import_onnx(model)(x).detach().numpy(),
                                  session.run(None, {"x": x})[0])


def test_an_undefined_input_is_named():
    model = _graph([helper.make_node("Add", ["x", "ghost"], ["y"], name="adder")])
    with pytest.raises(OnnxImportError, match="node 'adder'.*reads 'ghost'"):
        import_onnx(model)


def test_an_output_never_produced_is_named():
    model = _graph([helper.make_node("Relu", ["x"], ["y"])], outputs=("y", "never"))
    with pytest.raises(OnnxImportError, match="graph output 'never'"):
        import_onnx(model)


def test_a_value_written_twice_is_refused():
    model = _graph([helper.make_node("Relu", ["x"], ["y"], name="one"),
                    helper.make_node("Neg", ["x"], ["y"], name="two")])
    with pytest.raises(OnnxImportError, match="writes 'y'"):
        import_onnx(model)


@pytest.mark.parametrize("dims,raw", [([2 ** 40], b"\0" * 8), ([-1], b""), ([3], b"\0" * 8),
                                      ([2, 2 ** 62], b"")],
                         ids=["2^40", "negative", "raw_too_short", "overflowing"])
def test_initializers_whose_data_disagrees_with_dims(dims, raw):
    w = TensorProto(name="w", data_type=F32, dims=dims, raw_data=raw)
    model = _graph([helper.make_node("Add", ["x", "w"], ["y"])], initializers=[w])
    with pytest.raises(OnnxImportError, match="'w'"):
        import_onnx(model)


def test_deep_nesting_is_refused():
    body = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "leaf", [],
                             [helper.make_tensor_value_info("z", F32, [2])])
    leaf = body
    for _ in range(20):  # each level's else branch is the leaf: the file grows linearly
        node = helper.make_node("If", ["c"], ["z"], then_branch=body, else_branch=leaf)
        body = helper.make_graph([node], "level", [],
                                 [helper.make_tensor_value_info("z", F32, [2])])
    top = helper.make_node("If", ["c"], ["y"], then_branch=body, else_branch=leaf)
    graph = helper.make_graph([top], "g", [helper.make_tensor_value_info("x", F32, [2]),
                                           helper.make_tensor_value_info("c", TensorProto.BOOL,
                                                                         [])],
                              [helper.make_tensor_value_info("y", F32, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(OnnxImportError, match="nested more than"):
        import_onnx(model)


def test_bytes_that_are_not_a_model():
    with pytest.raises(OnnxImportError, match="not an ONNX model"):
        import_onnx(b"\x0a\xff\xff\xff\xff\xff\xff")


def test_an_unsupported_element_type_is_refused_at_import():
    model = _graph([helper.make_node("Identity", ["x"], ["y"])])
    model.graph.input[0].type.tensor_type.elem_type = TensorProto.FLOAT8E4M3FN
    with pytest.raises(OnnxImportError, match="graph value 'x'"):
        import_onnx(model)


def test_a_failing_node_is_named_at_run_time():
    shape = numpy_helper.from_array(np.array([3, 5], np.int64), "shape")
    model = _graph([helper.make_node("Reshape", ["x", "shape"], ["y"], name="bad_reshape")],
                   initializers=[shape])
    with pytest.raises(OnnxImportError, match="bad_reshape"):
        import_onnx(model)(pb.tensor(np.zeros(2, np.float32)))


def test_a_short_fuzz_finds_nothing():
    """100 mutants of real models, each in a child process (the committed script's short
    run; ``python tools/onnx_fuzz.py --cases 2000`` is the long one)."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "onnx_fuzz.py"), "--cases",
                             "100", "--seed", "1"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
