"""ONNX export: the battery (the C99 exporter's models) written with export_onnx, checked by
onnx.checker and run by onnxruntime at the example's batch size and at another one (the batch
axis is symbolic), against eager pullback; every elementwise rule, the layout ops and the
reductions at each opset (and imported back); what cannot be exported is named."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from export_battery import MODELS, build, eager_outputs, elementwise_case, mismatches
from pullback.compiler import ExportError, export_onnx, import_onnx, trace
from pullback.compiler._onnx import SUPPORTED_OPSETS
from pullback.compiler._onnx.elementwise import ELEMENTWISE_RULES

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def run_onnx(path, *inputs):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {i.name: np.asarray(getattr(x, "array", x)) for i, x in
             zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def _doubled(inputs):
    return tuple(pb.tensor(np.concatenate([x.numpy()] * 2 + [x.numpy()[:1]])) for x in inputs)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_onnxruntime_matches_eager_pullback_at_any_batch_size(model, tmp_path):
    net, inputs = build(model)
    path = tmp_path / f"{model}.onnx"
    proto = export_onnx(net, inputs, path)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    assert {o.domain for o in proto.opset_import} == {""}  # standard operators only
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    problem = mismatches(run_onnx(path, *inputs), eager_outputs(net, inputs))
    assert problem is None, problem
    other = _doubled(inputs)  # 2 B + 1 rows: neither traced size
    problem = mismatches(run_onnx(path, *other), eager_outputs(net, other))
    assert problem is None, problem


def test_weights_are_named_initializers_and_batch_norm_is_folded(tmp_path):
    net, inputs = build("lenet")
    proto = export_onnx(net, inputs, tmp_path / "lenet.onnx", dynamic_batch=False)
    names = {i.name for i in proto.graph.initializer}
    assert {"0.weight", "0.bias", "9.weight", "11.bias"} <= names, names
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Conv") == 2 and "BatchNormalization" not in ops and "Sub" not in ops, ops
    dims = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == list(inputs[0].shape)  # static batch when asked


def _tensor_ops(x, w):
    """Layout ops and reductions: every one of them has an ONNX rule of its own."""
    y = pb.cat([x[:, ::-2], pb.flip(x, 1)[:, 1:4]], axis=1)
    z = pb.stack([y, y * 2.0], axis=1).swapaxes(1, 2)
    t = pb.tril(x[0, None] @ w, 1) + pb.triu(x[1:2] @ w) - pb.broadcast_to(w[0], (3, 3))
    padded = pb.pad(x, (1, 2), value=-1.5)
    rows = pb.index_select(w, 0, pb.tensor([2, 0, 6]))
    return (z.sum(axis=(1, 2)), z.mean(axis=1, keepdims=True), z.amax(axis=-1),
            z.amin(axis=None), t, padded[..., -1, None], rows)


@pytest.mark.parametrize("opset", list(SUPPORTED_OPSETS))
def test_layout_ops_and_reductions_at_every_opset(opset, tmp_path):
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.standard_normal((4, 7)).astype(np.float32))
    w = pb.tensor(rng.standard_normal((7, 3)).astype(np.float32))
    path = tmp_path / "ops.onnx"
    export_onnx(lambda a: _tensor_ops(a, w), x, path, opset=opset)
    imported = import_onnx(path)  # the opset's forms read back (axes as attributes or inputs)
    for batch in (x, pb.tensor(rng.standard_normal((6, 7)).astype(np.float32))):
        expected = eager_outputs(lambda a: _tensor_ops(a, w), (batch,))
        problem = mismatches(run_onnx(path, batch), expected)
        assert problem is None, problem
        with pb.no_grad():
            problem = mismatches([t.detach().numpy() for t in imported(batch)], expected)
        assert problem is None, problem


@pytest.mark.parametrize("op", sorted(ELEMENTWISE_RULES))
def test_every_elementwise_rule_matches_its_ops_kernel(op, tmp_path):
    f, args = elementwise_case(op)
    path = tmp_path / f"{op}.onnx"
    export_onnx(f, args, path)
    (got,), (want,) = run_onnx(path, *args), eager_outputs(f, args)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert mismatches([got], [want]) is None, (got, want)


def test_an_op_without_an_onnx_rule_is_named_with_the_line(tmp_path):
    with pytest.raises(ExportError, match=r"op 'sinc' has no ONNX rule \(at .*test_export_onnx"):
        export_onnx(lambda x: pb.sinc(x), pb.randn(3, 2), tmp_path / "m.onnx")


def test_a_model_whose_structure_follows_the_batch_size_is_refused(tmp_path):
    with pytest.raises(ExportError, match=r"getitem's key .* depends on the batch size"):
        export_onnx(lambda x: x[: x.shape[0] - 1] * 2.0, pb.randn(4, 3), tmp_path / "m.onnx")
    export_onnx(lambda x: x[: x.shape[0] - 1] * 2.0, pb.randn(4, 3), tmp_path / "m.onnx",
                dynamic_batch=False)


def test_a_traced_graph_exports_with_static_shapes(tmp_path):
    w = pb.randn(4, 3)

    def f(x, y):
        return pb.relu(x @ w + y), (x @ w).sum(axis=1)

    x, y = pb.randn(5, 4), pb.randn(1, 3)
    with pb.no_grad():
        graph = trace(f, x, y)
    with pytest.raises(ExportError, match="dynamic_batch=False"):
        export_onnx(graph, None, tmp_path / "g.onnx")
    export_onnx(graph, None, tmp_path / "g.onnx", dynamic_batch=False,
                input_names=["x", "y"], output_names=["act", "total"])
    assert mismatches(run_onnx(tmp_path / "g.onnx", x, y), eager_outputs(f, (x, y))) is None
    assert [o.name for o in onnx.load(str(tmp_path / "g.onnx")).graph.output] == \
        ["act", "total"]


def test_the_exporter_is_registered_under_its_format_name():
    from pullback.plugins import exporters

    assert exporters()["onnx"] is export_onnx


def test_batch_sized_constants_and_numbers_follow_the_input_or_are_named(tmp_path):
    def zeros_state(x):  # a state made at the batch's size (an RNN's h0), and the batch size
        return x + pb.zeros(x.shape[0], 1) - x.shape[0]

    x = pb.randn(3, 2)
    export_onnx(zeros_state, x, tmp_path / "m.onnx")
    for batch in (x, pb.randn(7, 2)):
        assert mismatches(run_onnx(tmp_path / "m.onnx", batch),
                          eager_outputs(zeros_state, (batch,))) is None
    with pytest.raises(ExportError, match=r"rows differ along the batch"):
        export_onnx(lambda a: a + pb.arange(a.shape[0], dtype="float32")[:, None], x,
                    tmp_path / "m.onnx")
    with pytest.raises(ExportError, match=r"mul's input 1 \(6\) \(at .*test_export_onnx.*\) "
                                          r"depends on the batch size \(6 at one batch size, 8 at "
                                          r"another\), not as an input's size"):
        export_onnx(lambda a: a * (2 * a.shape[0]), x, tmp_path / "m.onnx")
