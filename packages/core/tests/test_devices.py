"""Devices and the backend registry: ``pullback.Device``, ``devices()``, ``is_available()``, the
CPU backend's contract, third-party backends, and the errors for missing device types."""

from __future__ import annotations

import json
import types
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback import backends, plugins
from pullback._cpu import CPUBackend
from pullback.backends import Backend
from pullback.errors import DeviceError, MissingPackageError
from pullback.hookspecs import hookimpl


@pytest.fixture
def refnp(throwaway_plugin: Any, numpy_backend: Any) -> Backend:
    """A third-party NumPy backend named ``refnp`` with two devices, registered for one test."""
    backend = numpy_backend("refnp", count=2)
    plugin = types.ModuleType("refnp_plugin")
    plugin.pullback_hook_api = "1.0"
    plugin.register_backends = hookimpl(lambda register: register(backend))
    throwaway_plugin(plugin, "refnp", "pullback-refnp")
    return backend


# -- Device ---------------------------------------------------------------------------------------

def test_cpu_device_spellings_are_one_interned_object() -> None:
    cpu = pb.Device("cpu")
    assert pb.Device("cpu:0") is cpu and pb.Device("cpu", 0) is cpu and pb.Device(cpu) is cpu
    assert cpu.type == "cpu" and cpu.index is None
    assert str(cpu) == "cpu" and repr(cpu) == "device(type='cpu')"
    assert cpu == "cpu" and cpu == "cpu:0" and cpu != "refnp" and cpu != "cuda:0"
    assert hash(cpu) == hash(pb.Device("cpu:0"))
    assert isinstance(cpu.backend, CPUBackend) and cpu.array_type is np.ndarray


@pytest.mark.parametrize(("spec", "index", "message"), [
    ("cpu:1", None, "the cpu backend has one device, got index 1"),
    ("cpu", 2, "the cpu backend has one device, got index 2"),
    ("cpu:x", None, r"bad device index in 'cpu:x' \(expected e.g. 'cuda:0'\)"),
    ("cpu:-1", None, "bad device index in 'cpu:-1'"),
    ("cpu:0", 0, r"device 'cpu:0' given an index twice \(0\)"),
    ("cpu", -1, "device index must be a non-negative int, got -1 for 'cpu'"),
    ("cpu", True, "device index must be a non-negative int, got True"),
    ("cpu", "0", "device index must be a non-negative int, got '0'"),
    ("nosuchdevice", None, r"unknown device type 'nosuchdevice' \(registered: cpu"),
    (3, None, "a device is a string like 'cpu' or 'cuda:0', got 3"),
])
def test_bad_device_specs_are_device_errors(spec: Any, index: Any, message: str) -> None:
    with pytest.raises(DeviceError, match=message):
        pb.Device(spec, index)


def test_a_third_party_device_type_with_indices(refnp: Backend) -> None:
    one = pb.Device("refnp:1")
    assert one is pb.Device("refnp", 1) and one.type == "refnp" and one.index == 1
    assert pb.Device("refnp") is pb.Device("refnp:0")
    assert str(one) == "refnp:1" and repr(one) == "device(type='refnp', index=1)"
    assert one == "refnp:1" and one != "refnp:0" and one.backend is refnp
    # Creating a device checks registration, not availability or the device count.
    assert pb.Device("refnp:7").index == 7


def test_third_party_tensors_compute_forward_and_backward(refnp: Backend) -> None:
    values = np.array([[1.0, -2.0], [0.5, 3.0]])
    x = pb.tensor(values, device="refnp:1", requires_grad=True)
    loss = (x * x + 3 * x).sum()
    loss.backward()
    assert loss.device == pb.Device("refnp:1") and x.grad.device == pb.Device("refnp:1")
    assert loss.item() == pytest.approx(float((values**2 + 3 * values).sum()))
    np.testing.assert_allclose(x.grad.numpy(), 2 * values + 3)


def test_moving_between_devices_carries_the_gradient_back(refnp: Backend) -> None:
    x = pb.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("refnp:1")
    assert y.device == pb.Device("refnp:1")
    z = (y * y).to("cpu").sum()
    z.backward()
    assert x.grad.device == pb.Device("cpu")
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def test_mixing_devices_in_one_op_names_them(refnp: Backend) -> None:
    a, b = pb.ones(2, 3), pb.ones(2, 3, device="refnp:1")
    with pytest.raises(DeviceError, match=r"mul: expected all tensors on one device, got cpu, "
                                          r"refnp:1 \(shapes \(2, 3\), \(2, 3\)\)"):
        a * b


# -- devices(), is_available() ------------------------------------------------------------------

def test_devices_and_availability_of_cpu() -> None:
    assert "cpu" in pb.devices()
    assert pb.is_available("cpu") and pb.is_available("cpu:0")
    assert not pb.is_available("nosuchdevice") and not pb.is_available("nosuchdevice:3")
    with pytest.raises(DeviceError, match="bad device index in 'cpu:x'"):
        pb.is_available("cpu:x")


def test_devices_lists_every_device_of_an_available_backend(refnp: Backend) -> None:
    listed = pb.devices()
    assert listed[0] == "cpu"
    assert [d for d in listed if d.startswith("refnp")] == ["refnp:0", "refnp:1"]
    assert pb.is_available("refnp") and pb.is_available("refnp:1")
    assert not pb.is_available("refnp:2")


def test_an_unavailable_backend_is_registered_but_not_usable(
        throwaway_plugin: Any, numpy_backend: Any) -> None:
    backend = numpy_backend("offnp", count=4, available=False, reason="no offnp driver")
    plugin = types.ModuleType("offnp_plugin")
    plugin.pullback_hook_api = "1.0"
    plugin.register_backends = hookimpl(lambda register: register(backend))
    throwaway_plugin(plugin, "offnp")
    assert "offnp" in backends.backends()
    assert not pb.is_available("offnp") and not pb.is_available("offnp:0")
    assert not any(d.startswith("offnp") for d in pb.devices())
    assert pb.Device("offnp").backend.unavailable_reason() == "no offnp driver"


def test_synchronize_on_the_cpu_returns() -> None:
    assert pb.synchronize() is None and pb.synchronize("cpu") is None


# -- a device type whose package is missing --------------------------------------------------------

@pytest.fixture
def npu_provider(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Pretend a device type 'npu' is provided by a given distribution."""
    def provide(distribution: str) -> None:
        monkeypatch.setitem(backends._KNOWN_PROVIDERS, "npu", distribution)
    return provide


def test_a_device_type_of_an_uninstalled_package_names_the_package(npu_provider: Any) -> None:
    npu_provider("pullback-npu-not-installed")
    message = "device type 'npu' is provided by pullback-npu-not-installed, which is not " \
              "installed: pip install pullback-npu-not-installed"
    for make in (lambda: pb.Device("npu:1"), lambda: pb.ones(2, device="npu"),
                 lambda: pb.ones(2).to("npu")):
        with pytest.raises(MissingPackageError, match=message):
            make()
    assert isinstance(MissingPackageError(""), ImportError)


def test_a_device_type_of_an_installed_package_that_did_not_register_it(npu_provider: Any) -> None:
    npu_provider("pullback")  # installed, and registers no "npu" backend
    with pytest.raises(DeviceError, match=r"provided by pullback, which is installed \(.+\) but "
                                          r"registered no 'npu' backend"):
        pb.Device("npu")


def test_a_device_type_of_a_package_that_failed_to_load_says_why(
        npu_provider: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    npu_provider("pullback-npu")
    failure = plugins.PluginRecord(name="npu", distribution="pullback-npu", version="0.1",
                                   module="pullback.npu._plugin",
                                   error="ImportError: libnpu.so not found")
    monkeypatch.setitem(plugins._failed, "npu", failure)
    with pytest.raises(DeviceError, match="provided by pullback-npu, which failed to load: "
                                          "ImportError: libnpu.so not found"):
        pb.Device("npu")


def test_moving_to_an_unusable_cuda_is_a_device_error_not_a_dtype_error() -> None:
    # Without pullback-cuda the error names the package; with it but without a usable GPU, the
    # backend says why. Either way "cuda" is never mistaken for a dtype name.
    if pb.is_available("cuda"):
        pytest.skip("a CUDA device is usable here")
    for make in (lambda: pb.ones(2).to("cuda"), lambda: pb.ones(2).cuda(),
                 lambda: pb.ones(2, device="cuda:0")):
        with pytest.raises((MissingPackageError, DeviceError), match="cuda"):
            make()


# -- the backend contract --------------------------------------------------------------------------

def test_the_base_backend_defaults() -> None:
    class Minimal(Backend):
        name = "minimal"

    backend = Minimal()
    assert backend.is_available() and backend.device_count() == 1
    assert backend.unavailable_reason() is None and backend.memory_info() is None
    assert backend.index_of(np.zeros(1)) == 0 and backend.synchronize() is None
    for missing in ("xp", "array_type"):
        with pytest.raises(NotImplementedError):
            getattr(backend, missing)
    with pytest.raises(NotImplementedError):
        backend.generator()
    with pytest.raises(NotImplementedError):
        backend.manual_seed(0)


def test_the_cpu_backend_contract() -> None:
    cpu = CPUBackend()
    assert cpu.name == "cpu" and cpu.xp is np and cpu.array_type is np.ndarray
    assert cpu.array_api and cpu.dlpack_device_type == 1
    assert cpu.is_available() and cpu.device_count() == 1
    arr = cpu.asarray([[1, 2], [3, 4]], dtype=np.float32)
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32
    np.testing.assert_array_equal(cpu.to_host(arr), arr)
    np.testing.assert_array_equal(cpu.from_host(arr), arr)
    np.testing.assert_array_equal(cpu.from_dlpack(arr), arr)


def test_cpu_generators_are_seeded_and_their_state_round_trips_through_json() -> None:
    cpu = CPUBackend()
    cpu.manual_seed(1234)
    first = cpu.generator().standard_normal(5)
    cpu.manual_seed(1234)
    state = json.loads(json.dumps(cpu.get_rng_state()))
    second = cpu.generator().standard_normal(5)
    third = cpu.generator().standard_normal(5)
    np.testing.assert_array_equal(first, second)
    cpu.set_rng_state(state)
    np.testing.assert_array_equal(cpu.generator().standard_normal(5), second)
    np.testing.assert_array_equal(cpu.generator().standard_normal(5), third)
    # The same stream as NumPy's PCG64 with that seed: the generator is exactly what it says.
    np.testing.assert_array_equal(first, np.random.Generator(np.random.PCG64(1234))
                                  .standard_normal(5))


def test_manual_seed_makes_tensor_sampling_reproducible() -> None:
    pb.manual_seed(7)
    a = pb.randn(3, 4)
    pb.manual_seed(7)
    b = pb.randn(3, 4)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
