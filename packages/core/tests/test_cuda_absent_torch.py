"""``torch.cuda``'s common calls and the tensors' device flags on a machine without a GPU,
against PyTorch on this CPU-only machine: the same results, or an exception of the class
PyTorch raises. ``pullback.cuda`` is checked as installed here (pullback-cuda with no usable
GPU) and, in a subprocess, as the stand-in core loads without pullback-cuda.

PyTorch's CPU-only build raises AssertionError ("Torch not compiled with CUDA enabled") where a
CUDA build without a GPU raises RuntimeError; pullback's DeviceUnavailableError is both.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

import pullback as pb

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

CALLS = [
    "cuda.is_available()", "cuda.device_count()", "cuda.is_initialized()",
    "cuda.is_bf16_supported()", "cuda.is_bf16_supported(False)", "cuda.is_tf32_supported()",
    "cuda.get_arch_list()", "cuda.empty_cache()", "cuda.memory_allocated()",
    "cuda.memory_allocated(0)", "cuda.max_memory_allocated()", "cuda.memory_reserved()",
    "cuda.max_memory_reserved()", "dict(cuda.memory_stats())", "cuda.manual_seed(1)",
    "cuda.manual_seed_all(1)", "cuda.seed()", "cuda.seed_all()", "cuda.get_rng_state_all()",
    "cuda.set_rng_state_all([])", "cuda.set_device(-1)", "cuda.set_device('cpu')",
    "cuda.set_device(None)", "cuda.current_device()", "cuda.synchronize()",
    "cuda.get_device_name()", "cuda.get_device_name(0)", "cuda.get_device_properties(0)",
    "cuda.get_device_capability()", "cuda.mem_get_info()", "cuda.init()", "cuda.initial_seed()",
    "cuda.get_rng_state()", "cuda.amp.GradScaler().is_enabled()",
    "cuda.amp.GradScaler(enabled=False).is_enabled()",
]
# where pullback's class differs from a CPU-only PyTorch build's, and why
DIFFERENT = {
    # the CPU-only build lacks the binding (AttributeError); a CUDA build without a GPU raises
    # RuntimeError, which pullback's DeviceUnavailableError is
    "cuda.set_device(0)": ("AttributeError", "RuntimeError"),
}
CALLS += list(DIFFERENT)

FLAGS = ["is_cuda", "is_cpu", "is_xpu", "is_mps", "is_meta", "is_sparse", "is_quantized",
         "is_mkldnn", "is_nested", "is_ipu", "is_vulkan", "is_mtia", "is_maia", "is_sparse_csr",
         "get_device()", "is_pinned()", "pin_memory()"]


def outcome(lib: Any, expression: str) -> dict[str, Any]:
    """What ``expression`` gives with ``lib`` bound as its namespace: a value (JSON-able, as
    text) or the exception's built-in classes."""
    namespace = {"cuda": lib.cuda, "x": lib.ones(3)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = eval(expression, namespace)  # noqa: S307 - the test's own expressions
        except Exception as exc:  # noqa: BLE001 - the class is what is compared
            builtin = [c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins"]
            return {"raises": builtin[0], "also": builtin}
    return {"value": repr(value) if not isinstance(value, (bool, int, list, dict, type(None)))
            else value}


def _expected(expression: str) -> dict[str, Any]:
    theirs = outcome(torch, expression)
    if expression in DIFFERENT:
        theirs["raises"] = DIFFERENT[expression][1]
    return theirs


def _agrees(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    if "raises" in theirs:  # pullback's class derives from PyTorch's
        return "raises" in ours and theirs["raises"] in ours["also"]
    return ours == theirs


@pytest.mark.parametrize("expression", CALLS)
def test_pullback_cuda_without_a_gpu_answers_as_pytorch(expression):
    if pb.cuda.is_available():
        pytest.skip("this machine has a GPU")
    ours, theirs = outcome(pb, expression), _expected(expression)
    assert _agrees(ours, theirs), (ours, theirs)


_STAND_IN = """
    import json, sys
    import pullback
    sys.path.insert(0, {here!r})
    from test_cuda_absent_torch import CALLS, outcome
    assert pullback.cuda.__file__.endswith("_cuda_absent.py")
    from pullback.cuda.amp import GradScaler  # the stand-in has torch.cuda.amp too
    print(json.dumps({{call: outcome(pullback, call) for call in CALLS}}))
"""


def test_the_stand_in_without_pullback_cuda_answers_as_pytorch(without_pullback_cuda):
    from pathlib import Path

    result = without_pullback_cuda(_STAND_IN.format(here=str(Path(__file__).parent)))
    assert result.returncode == 0, result.stderr
    ours = json.loads(result.stdout.strip().splitlines()[-1])
    wrong = {call: (ours[call], _expected(call)) for call in CALLS
             if not _agrees(ours[call], _expected(call))}
    assert not wrong


@pytest.mark.parametrize("flag", FLAGS)
def test_a_cpu_tensor_s_device_flags_as_pytorch_s(flag):
    if pb.accelerator.is_available():
        pytest.skip("pin_memory works with an accelerator")
    assert _agrees(outcome(pb, f"x.{flag}"), outcome(torch, f"x.{flag}"))


def test_the_refusal_names_the_call_and_why():
    with pytest.raises(AssertionError, match="current_device needs a CUDA device, and none is available: "):
        pb.cuda.current_device()
    with pytest.raises(RuntimeError, match="pin_memory: pinned memory needs an accelerator"):
        pb.ones(2).pin_memory()
