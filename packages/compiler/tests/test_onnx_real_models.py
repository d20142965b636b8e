"""Real models through import_onnx, against onnxruntime within 1e-4:

* the light model-zoo CNNs bundled with onnx (ResNet-50, VGG-19, Inception, DenseNet...);
* ResNet-18 and MobileNetV3-small exported by ``torch.onnx.export`` at opsets 17 to 21 with
  random weights and a symbolic batch, run at several batch sizes from one import. torchvision
  from PyPI does not import beside the torch 2.13 CPU build these tests use, so the two
  architectures are written here in torch, layer for layer as torchvision's (its own models
  are used instead when torchvision imports);
* transformers' BERT encoder and GPT-2 decoder at small configurations (random weights),
  with symbolic batch and sequence axes run at several sizes, where transformers is
  installed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import import_onnx

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytestmark = [pytest.mark.filterwarnings("ignore:.*legacy TorchScript-based ONNX"),
              pytest.mark.filterwarnings("ignore:The feature will be removed"),
              pytest.mark.filterwarnings("ignore:.*might cause the trace to be"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def onnxruntime_outputs(model_bytes, feeds):
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def assert_matches(net, model_bytes, feeds, tolerance=1e-4):
    expected = onnxruntime_outputs(model_bytes, feeds)
    with pb.no_grad():
        got = net(*feeds.values())
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected):
        g = g.detach().numpy()
        assert g.shape == e.shape
        scale = max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(g, e, rtol=tolerance, atol=tolerance * scale)


@pytest.mark.parametrize("path", sorted(LIGHT.glob("light_*.onnx")), ids=lambda p: p.stem)
def test_light_model_zoo_cnns(path):
    model = onnx.load(str(path))
    net = import_onnx(path)
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        if value.name in {t.name for t in model.graph.initializer}:
            continue
        dims = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(dims).astype(np.float32)
    assert_matches(net, model.SerializeToString(), feeds)


def _torch():
    return pytest.importorskip("torch")


def _vision_models(torch):
    """resnet18 and mobilenet_v3_small: torchvision's when it imports, else the same
    architectures written here."""
    try:
        import torchvision

        return {"resnet18": lambda: torchvision.models.resnet18(num_classes=10),
                "mobilenet_v3_small": lambda: torchvision.models.mobilenet_v3_small(
                    num_classes=10)}
    except Exception:  # noqa: BLE001  (torchvision absent, or built for another torch)
        from torch_vision_models import mobilenet_v3_small, resnet18

        return {"resnet18": lambda: resnet18(torch, 10),
                "mobilenet_v3_small": lambda: mobilenet_v3_small(torch, 10)}


def _export(torch, model, example, path, opset, dynamic_axes, input_names):
    model.eval()
    torch.onnx.export(model, example, str(path), dynamo=False, opset_version=opset,
                      input_names=input_names, dynamic_axes=dynamic_axes)
    return path.read_bytes()


@pytest.mark.parametrize("opset", [17, 18, 19, 20, 21])
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_vision_models_exported_by_pytorch(name, opset, tmp_path):
    torch = _torch()
    torch.manual_seed(0)
    model = _vision_models(torch)[name]()
    x = torch.randn(1, 3, 32, 32)
    data = _export(torch, model, (x,), tmp_path / "m.onnx", opset, {"x": {0: "batch"}}, ["x"])
    net = import_onnx(data)  # one import, several batch sizes
    rng = np.random.default_rng(opset)
    for batch in (1, 2):
        assert_matches(net, data, {"x": rng.standard_normal((batch, 3, 32, 32))
                                   .astype(np.float32)})


def _transformers(torch):
    transformers = pytest.importorskip("transformers")
    try:  # transformers imports torchvision when it is installed, even one that cannot load
        transformers.BertModel, transformers.GPT2Model  # noqa: B018
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"transformers' models do not import here: {str(exc)[:100]}")
    return transformers


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_transformers_encoder_and_decoder(kind, tmp_path):
    torch = _torch()
    transformers = _transformers(torch)
    torch.manual_seed(0)
    if kind == "bert":
        config = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                         num_attention_heads=4, intermediate_size=64,
                                         max_position_embeddings=64)
        model = transformers.BertModel(config)
    else:
        config = transformers.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=4,
                                         n_positions=64)
        model = transformers.GPT2Model(config)

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, ids):
            return self.inner(input_ids=ids, attention_mask=torch.ones_like(ids),
                              use_cache=False).last_hidden_state

    ids = torch.randint(0, 100, (2, 7))
    data = _export(torch, LastHiddenState(model), (ids,), tmp_path / "m.onnx", 17,
                   {"ids": {0: "batch", 1: "sequence"}}, ["ids"])
    net = import_onnx(data)
    rng = np.random.default_rng(0)
    for batch, length in ((1, 5), (3, 9)):
        feeds = {"ids": rng.integers(0, 100, (batch, length)).astype(np.int64)}
        expected = onnxruntime_outputs(data, feeds)[0]
        with pb.no_grad():
            got = net(feeds["ids"])
        got = got[0] if isinstance(got, tuple) else got
        np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-4, atol=1e-4)
