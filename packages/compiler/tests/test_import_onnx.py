"""ONNX import: pullback's own exports of the battery and models that torch.onnx.export writes
(an MLP, a small CNN with batch norm, a Transformer block) load as Modules that match
onnxruntime; an imported model trains (its gradients are PyTorch's); an operator without a
pullback form is named with its opset."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pullback as pb
from export_battery import MODELS, build, eager_outputs, mismatches
from pullback.compiler import OnnxImportError, export_onnx, import_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
# torch.onnx.export without onnxscript is the TorchScript exporter: it warns that it is legacy
# and that sizes read in Python become constants (the batch axis is declared dynamic instead)
pytestmark = [pytest.mark.filterwarnings("ignore:.*legacy TorchScript-based ONNX"),
              pytest.mark.filterwarnings("ignore:The feature will be removed"),
              pytest.mark.filterwarnings("ignore:.*might cause the trace to be")]


def run_onnx(path, *inputs):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: np.asarray(x) for i, x in zip(session.get_inputs(),
                                                                     inputs)})


def imported_outputs(net, *inputs):
    with pb.no_grad():
        result = net(*inputs)
    return [t.detach().numpy() for t in (result if isinstance(result, tuple) else (result,))]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_pullbacks_own_exports_import_back(model, tmp_path):
    net, inputs = build(model)
    path = tmp_path / f"{model}.onnx"
    export_onnx(net, inputs, path)
    imported = import_onnx(path)
    arrays = [x.numpy() for x in inputs]
    assert mismatches(imported_outputs(imported, *arrays), run_onnx(path, *arrays)) is None
    assert mismatches(imported_outputs(imported, *arrays), eager_outputs(net, inputs)) is None


def _torch_models(torch):
    class Block(torch.nn.Module):
        """Pre-norm attention and a GELU MLP, as a GPT block (d=16, 2 heads)."""

        def __init__(self, d=16, heads=2):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
            self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
            self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                           torch.nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), -1)
            x = x + self.proj((weights @ v).transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    nn = torch.nn
    return {
        "mlp": (nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4)), (5, 12)),
        "cnn": (nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Conv2d(4, 8, 3), nn.ReLU(), nn.AvgPool2d(2),
                              nn.Flatten(), nn.Linear(8 * 3 * 3, 10)), (2, 1, 16, 16)),
        "transformer_block": (Block(), (2, 5, 16)),
    }


def _torch_export(torch, name, path):
    torch.manual_seed(0)
    model, shape = _torch_models(torch)[name]
    model.eval()
    x = torch.randn(*shape)
    torch.onnx.export(model, (x,), str(path), dynamo=False, opset_version=17,
                      input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    return model, x


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer_block"])
def test_models_that_pytorch_exports_match_onnxruntime(name, tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / f"{name}.onnx"
    _, x = _torch_export(torch, name, path)
    imported = import_onnx(path)
    for batch in (x.numpy(), np.concatenate([x.numpy()] * 3)):
        assert mismatches(imported_outputs(imported, batch), run_onnx(path, batch)) is None


def test_an_imported_model_trains_with_pytorchs_gradients(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "mlp.onnx"
    model, x = _torch_export(torch, "mlp", path)
    imported = import_onnx(path)
    loss = (model(x) ** 2).mean()
    loss.backward()
    mine = (imported(pb.tensor(x.numpy())) ** 2).mean()
    mine.backward()
    np.testing.assert_allclose(mine.item(), loss.item(), rtol=1e-6)
    params = dict(imported.named_parameters())
    for name, p in model.named_parameters():
        slot = "p_" + name.replace(".", "_")
        np.testing.assert_allclose(params[slot].grad.numpy(), p.grad.numpy(), rtol=1e-5,
                                   atol=1e-7, err_msg=name)


def test_an_unsupported_operator_is_named_with_its_opset(tmp_path):
    from onnx import TensorProto, helper

    # DeformConv stays refused (docs/compiler.md lists why)
    node = helper.make_node("DeformConv", ["x", "w", "offset"], ["y"], name="the_deform")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                                                          [1, 1, 2, 2])
                                            for n in ("x", "w", "offset")],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(OnnxImportError, match=r"'DeformConv' .*opset 19, node 'the_deform'"):
        import_onnx(model)


def test_operators_torch_writes_without_constant_folding_match_onnxruntime():
    """Batch norm (its statistics stay fixed), dropout at inference, and activations that
    pullback's exporter writes as formulas: a graph written with onnx.helper."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    c = 3
    weights = {"scale": rng.standard_normal(c), "bias": rng.standard_normal(c),
               "mean": rng.standard_normal(c), "var": rng.uniform(0.5, 2.0, c)}
    initializers = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()]
    nodes = [helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"],
                              ["bn"], epsilon=1e-3),
             helper.make_node("Dropout", ["bn"], ["drop"]),
             helper.make_node("Elu", ["drop"], ["elu"], alpha=0.7),
             helper.make_node("Selu", ["drop"], ["selu"]),
             helper.make_node("HardSigmoid", ["drop"], ["hsig"], alpha=0.3, beta=0.4),
             helper.make_node("HardSwish", ["drop"], ["hswish"]),
             helper.make_node("Softplus", ["drop"], ["softplus"]),
             helper.make_node("Gelu", ["drop"], ["gelu"], approximate="tanh")]
    outputs = ["elu", "selu", "hsig", "hswish", "softplus", "gelu"]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, c, 4, 5])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, [2, c, 4, 5]) for o in outputs],
        initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    x = (rng.standard_normal((2, c, 4, 5)) * 2).astype(np.float32)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    imported = import_onnx(model)
    assert mismatches(imported_outputs(imported, x), session.run(None, {"x": x})) is None
    assert sorted(n for n, _ in imported.named_parameters()) == ["bias", "scale"]
