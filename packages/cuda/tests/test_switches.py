"""Switching custom kernels on and off, and the fallback to the generic kernel (run on a NumPy
stand-in backend, so that the dispatch logic is tested without a GPU)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback import plugins
from pullback.cuda import _switches, custom_kernels_enabled, use_custom_kernels
from pullback.cuda._kernels import OP_KERNELS, CustomKernel
from pullback.backends import Backend
from pullback.hookspecs import hookimpl


@pytest.mark.parametrize("value, on", [
    (None, set(_switches.KERNELS)), ("1", set(_switches.KERNELS)), ("all", set(_switches.KERNELS)),
    ("0", set()), ("none", set()), ("softmax, layer_norm", {"softmax", "layer_norm"}),
])
def test_environment_variable(value, on):
    assert _switches.parse(value) == on


def test_environment_variable_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown kernel.*mamtul"):
        _switches.parse("mamtul")


def test_use_custom_kernels_as_call_and_as_context():
    before = custom_kernels_enabled()
    with use_custom_kernels(False):
        assert not any(custom_kernels_enabled().values())
        with use_custom_kernels(True, "softmax"):
            assert custom_kernels_enabled()["softmax"] and not custom_kernels_enabled()["matmul"]
        assert not custom_kernels_enabled()["softmax"]
    assert custom_kernels_enabled() == before
    use_custom_kernels(False, "adamw")
    try:
        assert not custom_kernels_enabled()["adamw"]
    finally:
        use_custom_kernels(True, "adamw")
    with pytest.raises(ValueError, match="unknown kernel"):
        use_custom_kernels(False, "conv")


def test_every_switch_serves_an_op_and_every_op_kernel_has_a_switch():
    switches = {switch for _, switch, _ in OP_KERNELS} | {"adamw"}  # adamw: pullback.optim
    assert switches == set(_switches.KERNELS)


class _NumpyGPU(Backend):
    name = "fake_gpu"

    @property
    def xp(self) -> Any:
        return np

    @property
    def array_type(self) -> type:
        return np.ndarray


class _Plugin:
    pullback_hook_api = "1.0"

    @staticmethod
    @hookimpl
    def register_backends(register):
        register(_NumpyGPU())


@pytest.fixture
def fake_gpu():
    plugins.register_plugin(_Plugin, name="fake_gpu_test", distribution="test")
    yield
    plugins.unregister_plugin("fake_gpu_test")


def test_custom_kernel_runs_when_on_and_falls_back_when_off_or_declined(fake_gpu):
    calls = []

    def custom(a, b):
        calls.append(a.shape)
        return NotImplemented if a.shape[0] == 1 else np.full((a.shape[0], b.shape[1]), 7.0)

    kernel = CustomKernel("matmul", "matmul", custom, backend="fake_gpu")
    a, b = np.ones((2, 3)), np.ones((3, 4))
    with use_custom_kernels(True, "matmul"):
        np.testing.assert_array_equal(kernel(a, b), np.full((2, 4), 7.0))
        np.testing.assert_array_equal(kernel(a[:1], b), np.full((1, 4), 3.0))  # declined
    assert calls == [(2, 3), (1, 3)]
    with use_custom_kernels(False, "matmul"):
        np.testing.assert_array_equal(kernel(a, b), np.full((2, 4), 3.0))
    assert len(calls) == 2  # not even asked


def test_custom_kernels_of_nn_ops_wait_for_nn():
    """A kernel for an op nobody declared yet is kept pending by the registry (pullback.nn may
    load after pullback.cuda); once nn is loaded the cuda kernels sit on its ops."""
    pytest.importorskip("pullback.nn", reason="pullback-nn is not installed")
    for op_name, switch, _ in OP_KERNELS:
        kernel = pb.get_op(op_name).kernels["cuda"]
        assert isinstance(kernel, CustomKernel) and kernel.switch == switch
