"""The cuda backend on any machine: it registers, and where CuPy or a GPU is missing it says so
instead of failing later."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import pullback as pb
import pullback.cuda
from pullback import plugins
from pullback.cuda import _cupy
from pullback.cuda._backend import CUDABackend
from pullback.backends import get_backend
from pullback.errors import DeviceError


@pytest.fixture
def probe_result():
    """Replace the cached probe for one test (then look again, for real). Devices are interned
    with their backend's array type, so cuda devices made meanwhile are forgotten too."""
    def set_probe(result: _cupy.Probe) -> None:
        _cupy.reset_for_tests(result)

    yield set_probe
    _cupy.reset_for_tests(None)
    for key in [k for k, d in pb.Device._cache.items() if d.type == "cuda"]:
        del pb.Device._cache[key]


def test_plugin_registers_backend_and_kernels():
    record = plugins.records()["cuda"]
    assert record.distribution == "pullback-cuda"
    assert record.registered["backends"] == ["cuda"]
    assert "matmul[cuda]" in record.registered["kernels"]
    assert isinstance(get_backend("cuda"), CUDABackend)
    assert pb.get_op("matmul").kernels["cuda"].switch == "matmul"


def test_device_objects_need_no_gpu():
    dev = pb.Device("cuda:1")
    assert (dev.type, dev.index) == ("cuda", 1)
    assert pb.Device("cuda") is pb.Device("cuda:0")
    assert get_backend("cuda").dlpack_device_type == 2


def test_no_cupy_is_reported_with_the_install_command(probe_result, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    probe_result(None)
    assert not pullback.cuda.is_available()
    reason = pullback.cuda.unavailable_reason()
    assert reason.startswith("CuPy is not installed")
    assert "pullback-cuda[cuda12]" in reason and "[cuda13]" in reason
    assert pullback.cuda.device_count() == 0
    assert get_backend("cuda").array_type.__name__ == "_NoArray"


def test_no_gpu_is_reported_with_the_cuda_error(probe_result):
    probe_result(_cupy.Probe(None, 0, "no usable CUDA device: cudaErrorNoDevice"))
    assert not pullback.cuda.is_available()
    assert not pb.is_available("cuda")
    assert "cuda:0" not in pb.devices()
    with pytest.raises(DeviceError, match="'cuda' is unavailable: no usable CUDA device"):
        pb.zeros(3, device="cuda")
    with pytest.raises(DeviceError, match="cudaErrorNoDevice"):
        pb.tensor([1.0, 2.0]).to("cuda")
    with pytest.raises(DeviceError, match="none is available: no usable CUDA device"):
        pullback.cuda.synchronize()


@pytest.mark.skipif(_cupy.probe().device_count > 0, reason="this machine has a GPU")
def test_real_probe_without_gpu_names_cupy_and_runtime():
    reason = pullback.cuda.unavailable_reason()
    assert reason is not None
    if _cupy.probe().cupy is not None:  # CuPy installed, no usable device
        assert reason.startswith("no usable CUDA device") or "no device" in reason
        assert "CuPy " in reason and "CUDA runtime" in reason


def test_probe_is_cached():
    first = _cupy.probe()
    assert _cupy.probe() is first


def test_rng_state_is_json_without_a_gpu():
    backend = CUDABackend()
    backend.manual_seed(7)
    state = json.loads(json.dumps(backend.get_rng_state()))
    assert state == {"seed": 7, "generators": {}}


def test_plugins_cli_lists_cuda_with_its_reason():
    out = subprocess.run([sys.executable, "-m", "pullback", "plugins"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if "pullback-cuda" in x)
    expected = ("cuda [available" if pullback.cuda.is_available()
                else f"cuda [unavailable: {pullback.cuda.unavailable_reason()}]")
    assert expected in line
    assert "matmul[cuda]" in line


def test_pip_hint_when_the_plugin_is_disabled():
    code = ("import pullback as pb\n"
            "try:\n    pb.zeros(2, device='cuda')\n"
            "except Exception as e:\n    print(type(e).__name__, e)\n")
    env = {**os.environ, "PULLBACK_DISABLE_PLUGINS": "pullback-cuda"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert "provided by pullback-cuda" in out.stdout, out.stdout + out.stderr
