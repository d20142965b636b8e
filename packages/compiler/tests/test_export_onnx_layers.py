"""Every layer class of pullback.nn exported at every supported opset: checked by
``onnx.checker.check_model(full_check=True)`` and run in onnxruntime against eager pullback at
the example's batch size and at another one (the batch axis is symbolic where the layer's
batch is the first axis). The cases are onnx_layer_cases.py's table; a class of
``pullback.nn.modules.__all__`` without a case there fails here."""

from __future__ import annotations

import pytest

import pullback.nn.modules as modules
from export_battery import eager_outputs, mismatches
from onnx_layer_cases import BASE_CLASSES, CASES, NOT_EXPORTABLE
from pullback.compiler import CompileError, export_onnx
from pullback.compiler._onnx import SUPPORTED_OPSETS

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def run_onnx(path, inputs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: x.numpy() for i, x in zip(session.get_inputs(), inputs)}
    return session.run(None, feeds)


def test_every_layer_class_has_an_export_case():
    covered = {case.layer for case in CASES} | {case.layer for case, _, _ in NOT_EXPORTABLE}
    missing = sorted(set(modules.__all__) - covered - set(BASE_CLASSES))
    assert not missing, f"layers of pullback.nn without an ONNX export case: {missing}"
    assert covered <= set(modules.__all__), sorted(covered - set(modules.__all__))


@pytest.mark.parametrize("case, reason, message", NOT_EXPORTABLE,
                         ids=[c.id for c, _, _ in NOT_EXPORTABLE])
def test_what_cannot_export_fails_with_an_error_naming_it(case, reason, message, tmp_path):
    with pytest.raises(CompileError, match=message):  # ExportError and TraceError both
        export_onnx(case.make(), case.tensors(2), tmp_path / "m.onnx", dynamic_batch=False)
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.parametrize("opset", list(SUPPORTED_OPSETS))
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_layer_exports_and_matches_onnxruntime(case, opset, tmp_path):
    import pullback as pb

    pb.manual_seed(0)
    layer = case.make()
    layer.eval()
    inputs = case.tensors(2)
    dynamic = case.batch_axis == 0
    path = tmp_path / f"{case.id}.onnx"
    export_onnx(layer, inputs, path, opset=opset, dynamic_batch=dynamic)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert {o.domain for o in model.opset_import} == {""}
    assert [o.version for o in model.opset_import] == [opset]
    batches = [inputs] + ([case.tensors(5, seed=1)] if dynamic else [])
    for batch in batches:
        problem = mismatches(run_onnx(path, batch), eager_outputs(layer, batch),
                             case.tolerance)
        assert problem is None, f"batch {batch[0].shape}: {problem}"
