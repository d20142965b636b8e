"""``pullback.onnx.export`` and ``pullback.compile`` with torch's arguments: they delegate to
pullback-compiler (the exported file run in onnxruntime and the compiled model checked against
eager pullback), and say which distribution to install when it is missing."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback import _install_hint
from pullback.errors import MissingPackageError


def test_without_pullback_compiler_export_names_the_distribution(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_install_hint, "_installed", lambda d: d != "pullback-compiler")
    with pytest.raises(MissingPackageError, match="pullback.onnx.export is provided by "
                                                  "pullback-compiler, which is not installed"):
        pb.onnx.export(lambda x: x, (pb.ones(1),), io.BytesIO())


@pytest.fixture
def mlp() -> Any:
    pytest.importorskip("pullback.compiler")
    pytest.importorskip("onnx")
    nn = pytest.importorskip("pullback.nn")
    pb.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))


def run(model_bytes: bytes, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def test_export_to_a_file_object_with_a_dynamic_batch(mlp: Any) -> None:
    buffer = io.BytesIO()
    pb.onnx.export(mlp, (pb.randn(2, 4),), buffer, input_names=["x"], output_names=["logits"],
                   dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}}, opset_version=18,
                   do_constant_folding=True, verbose=False)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(run(buffer.getvalue(), x), mlp(pb.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_export_to_a_path_has_fixed_sizes_without_dynamic_axes(mlp: Any, tmp_path: Any) -> None:
    onnx = pytest.importorskip("onnx")
    path = tmp_path / "mlp.onnx"
    pb.onnx.export(mlp, pb.randn(2, 4), path)
    model = onnx.load(str(path))
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2, 4]  # as torch.onnx.export without dynamic_axes
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(run(path.read_bytes(), x), mlp(pb.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, error", [
    ({"dynamic_axes": {"input": {1: "features"}}}, ValueError),
    ({"export_params": False}, ValueError), ({"no_such_option": 1}, TypeError),
])
def test_what_cannot_be_honoured_is_refused(mlp: Any, kwargs: dict[str, Any],
                                            error: type) -> None:
    with pytest.raises(error):
        pb.onnx.export(mlp, (pb.randn(2, 4),), io.BytesIO(), **kwargs)


# -- pullback.compile, torch.compile's name over the same distribution ------------------------------

def test_compile_without_pullback_compiler_names_the_distribution(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_install_hint, "_installed", lambda d: d != "pullback-compiler")
    with pytest.raises(MissingPackageError, match="pullback.compile is provided by "
                                                  "pullback-compiler"):
        pb.compile(lambda x: x)


def test_compile_as_torch_compile(mlp: Any) -> None:
    x = pb.randn(4, 4)
    compiled = pb.compile(mlp, backend="inductor", mode="max-autotune", dynamic=False)
    for _ in range(2):  # traced, then replayed
        np.testing.assert_allclose(compiled(x).detach().numpy(), mlp(x).detach().numpy(),
                                   rtol=1e-6, atol=1e-7)

    @pb.compile(fullgraph=True)
    def double(t: Any) -> Any:
        return t * 2.0

    np.testing.assert_array_equal(double(x).numpy(), (x * 2.0).numpy())
    assert pb.compile(mlp, disable=True) is mlp
    with pytest.raises(TypeError, match="unexpected"):
        pb.compile(mlp, no_such_option=1)
