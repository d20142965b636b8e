"""The backend conformance suite (``pytest -p pullback.testing.conformance --backend NAME``),
tested against throw-away NumPy backends: a correct one passes, and one broken in a forward
kernel, in a gradient-only kernel or in error handling fails, naming the op."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from pullback.backends import Device
from pullback.hookspecs import hookimpl
from pullback.testing import conformance
from pullback.testing.opdb import OP_DB, get_record, sample_cases


class _BackendPlugin:
    """A plugin registering one backend and, optionally, kernels of its own for it."""

    pullback_hook_api = "1.0"

    def __init__(self, backend: Any, kernels: dict[str, Callable[..., Any]] | None = None) -> None:
        self.backend = backend
        self.kernels = kernels or {}

    @hookimpl
    def register_backends(self, register: Callable[[Any], None]) -> None:
        register(self.backend)

    @hookimpl
    def register_kernels(self, register: Callable[[str, str, Callable[..., Any]], None]) -> None:
        for op_name, kernel in self.kernels.items():
            register(op_name, self.backend.name, kernel)


@pytest.fixture
def make_backend(throwaway_plugin: Any, numpy_backend: Any) -> Callable[..., Device]:
    def make(name: str, kernels: dict[str, Callable[..., Any]] | None = None) -> Device:
        throwaway_plugin(_BackendPlugin(numpy_backend(name), kernels), name=f"test-{name}")
        return Device(name)

    return make


def _failures(device: Device, record_name: str, dtypes: tuple[str, ...] = ("float64",)) -> list[str]:
    return [f for c in sample_cases([get_record(record_name)], dtypes)
            for f in conformance.check_sample(device, c).failures]


def test_a_correct_backend_passes_every_float64_sample(make_backend: Any) -> None:
    device = make_backend("npcorrect")
    with np.errstate(all="ignore"):
        failures = [(c.id, conformance.check_sample(device, c).failures)
                    for c in sample_cases(OP_DB, ("float64",))]
    assert [f for f in failures if f[1]] == []


def test_results_must_stay_on_the_device(make_backend: Any) -> None:
    device = make_backend("npcorrect2")
    outcome = conformance.check_sample(device, sample_cases([get_record("mul")], ("float32",))[0])
    assert outcome.passed
    outcome.problems.clear()
    conformance._check_devices(outcome, device, ["cpu"])
    assert outcome.failures == [f"result 0 is on cpu, expected {device}"]


def test_a_wrong_forward_kernel_fails_its_op_only(make_backend: Any) -> None:
    device = make_backend("npbadexp", {"exp": lambda x: np.exp(x) * (1 + 1e-6)})
    assert any("output 0" in f for f in _failures(device, "exp"))
    assert _failures(device, "tanh") == []


def test_a_kernel_wrong_only_in_backward_fails_on_the_gradients(make_backend: Any) -> None:
    # sum_to is what broadcasting's gradient runs: forward values stay right.
    def sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return np.zeros(shape, dtype=g.dtype)

    device = make_backend("npbadsumto", {"sum_to": sum_to})
    failures = _failures(device, "add")
    assert failures and all("gradient" in f or "double backward" in f or "output" in f
                            for f in failures)
    assert not any(f.startswith("output 0") for f in failures)


def test_a_backend_that_swallows_errors_fails_the_error_cases(make_backend: Any) -> None:
    # einsum's shape errors come from its kernel (matmul's are checked before dispatch).
    def lenient_einsum(*operands: np.ndarray, equation: str) -> np.ndarray:
        return np.zeros((2, 2), dtype=operands[0].dtype)

    device = make_backend("nplenient", {"einsum": lenient_einsum})
    record = get_record("einsum")
    with pytest.raises(AssertionError, match="einsum.*on nplenient.*expected ShapeError"):
        for case in record.error_list():
            conformance.check_error(device, record, case)


_PLUGIN = '''
    """A throw-away backend plugin, registered when pytest imports it with -p: a NumPy backend
    whose own exp kernel is off by 1e-3."""
    import numpy as np
    from pullback import plugins
    from pullback.backends import Backend
    from pullback.hookspecs import hookimpl

    class NumpyRef(Backend):
        name = "npref"
        xp = np
        array_type = np.ndarray
        def generator(self, index=0):
            return np.random.default_rng(0)

    class Plugin:
        pullback_hook_api = "1.0"
        @hookimpl
        def register_backends(self, register):
            register(NumpyRef())
        @hookimpl
        def register_kernels(self, register):
            register("exp", "npref", lambda x: np.exp(x) + 1e-3)

    plugins.register_plugin(Plugin(), name="npref", distribution="npref-test")
'''


def _run_suite(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "npref_plugin.py").write_text(textwrap.dedent(_PLUGIN))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULLBACK_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "npref_plugin", "-p", "pullback.testing.conformance",
         "--backend", "npref", "-q", "-p", "no:cacheprovider", *args],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def test_the_one_command_runs_the_suite_and_fails_exactly_the_broken_op(tmp_path: Path) -> None:
    # The backend's own exp kernel is off by 1e-3; two records keep this quick (the whole suite
    # runs the same way, without --conformance-records).
    result = _run_suite(tmp_path, "--conformance-records", "exp,getitem", "-rf")
    out = result.stdout
    assert result.returncode == 1, out[-3000:] + result.stderr[-3000:]
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed and all("[exp-" in line for line in failed), failed
    assert "output 0: error" in out
    summary = out.strip().splitlines()[-1]
    assert " passed" in summary and " failed" in summary  # getitem, the device checks: passed


class _Config:
    """The part of pytest's Config the plugin's configure hook reads."""

    def __init__(self, backend: str | None) -> None:
        self.backend = backend
        self.args = ["test_mine.py"]
        self.args_source = pytest.Config.ArgsSource.ARGS

    def getoption(self, name: str, default: Any = None) -> Any:
        return {"--backend": self.backend}.get(name, default)


def test_without_backend_the_plugin_does_nothing() -> None:
    config = _Config(None)
    conformance.pytest_configure(config)  # type: ignore[arg-type]
    assert config.args == ["test_mine.py"]
    assert conformance.selected_cases(config) == []  # type: ignore[arg-type]
    assert conformance.pytest_report_header(config) is None  # type: ignore[arg-type]


def test_with_backend_the_plugin_adds_its_own_tests(make_backend: Any) -> None:
    make_backend("npadds")
    config = _Config("npadds")
    conformance.pytest_configure(config)  # type: ignore[arg-type]
    assert config.args == ["test_mine.py", str(conformance._TESTS)]
    assert Path(config.args[1]).is_file()


def test_an_unknown_backend_is_a_clear_error() -> None:
    from pullback.errors import DeviceError

    with pytest.raises(DeviceError, match="unknown device type 'nosuchbackend'"):
        conformance.pytest_configure(_Config("nosuchbackend"))  # type: ignore[arg-type]
