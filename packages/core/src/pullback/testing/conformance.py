"""The backend conformance suite, as a pytest plugin: a backend proves itself with one command.

    python -m pytest -p pullback.testing.conformance --backend NAME

``NAME`` is a registered device type or a device (``refcpu``, ``cuda:1``). Every sample of the op
database (:mod:`pullback.testing.opdb`) runs on that device, its inputs moved there with
``.to(device)``, and on the CPU backend; the two must agree on output values, shapes and dtypes,
on the gradients with respect to every input, and (float64) on the double backward. Bad inputs
must raise the error types the database names. Two device checks complete it: ``.to`` there and
back keeps values and dtypes (and gradients flow back through it), and mixing devices in one op
is a :class:`~pullback.errors.DeviceError`.

The caller needs no test files: given ``--backend``, the plugin collects its own test module,
:mod:`pullback.testing._conformance_tests` (besides any paths on the command line; without paths
only the suite runs). Without ``--backend`` the plugin does nothing. The usual options apply
(``-k matmul``, ``-x``, ``-q``); ``--conformance-dtypes float32,float64`` limits the dtypes,
for a backend that lacks some (every dtype of the database is checked by default), and
``--conformance-records matmul,einsum`` the database records (all by default), to check a few
new kernels quickly.

The plugin is loaded with ``-p`` and is deliberately not a ``pytest11`` entry point: that would add
``--backend`` to every pytest run wherever pullback is installed, where it would collide with any
other plugin's option of that name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .compare import Outcome, PullbackFramework, compare_runs, error_case_problem, run_sample
from .opdb import OP_DB, Case, ErrorCase, OpRecord, error_cases, get_record, sample_cases
from .oracle import case_seed

_TESTS = Path(__file__).with_name("_conformance_tests.py")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pullback-conformance", "pullback backend conformance suite")
    group.addoption("--backend", default=None, metavar="NAME",
                    help="run the op database on this backend (device) against the CPU")
    group.addoption("--conformance-dtypes", default=None, metavar="DTYPES",
                    help="comma-separated dtypes to check (default: all the database covers)")
    group.addoption("--conformance-records", default=None, metavar="NAMES",
                    help="comma-separated op database records to check (default: all)")


def pytest_configure(config: pytest.Config) -> None:
    name = config.getoption("--backend")
    if not name:
        return
    from ..backends import Device

    Device(name)  # an unknown or missing backend fails here, with pullback's own message
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        config.args.append(str(_TESTS))
    else:  # no paths given: run the suite alone, not the tests of the current folder
        config.args = [str(_TESTS)]


def pytest_report_header(config: pytest.Config) -> str | None:
    name = config.getoption("--backend")
    if not name:
        return None
    return f"pullback conformance: backend {name} against cpu, dtypes {', '.join(dtypes(config))}"


def _names(config: pytest.Config, option: str) -> tuple[str, ...] | None:
    chosen = config.getoption(option, default=None)
    return tuple(n.strip() for n in chosen.split(",") if n.strip()) if chosen else None


def dtypes(config: pytest.Config) -> tuple[str, ...]:
    """The dtypes the run checks."""
    return _names(config, "--conformance-dtypes") or (
        "float16", "bfloat16", "float32", "float64", "int32", "int64", "bool")


def records(config: pytest.Config) -> tuple[OpRecord, ...]:
    """The database records the run checks."""
    names = _names(config, "--conformance-records")
    return OP_DB if names is None else tuple(get_record(n) for n in names)


@pytest.fixture(scope="session")
def conformance_device(pytestconfig: pytest.Config) -> Any:
    """The :class:`~pullback.Device` under test (``--backend``)."""
    from ..backends import Device

    name = pytestconfig.getoption("--backend")
    if not name:
        pytest.skip("no --backend given")
    device = Device(name)
    if not device.backend.is_available():
        pytest.fail(f"backend '{device.type}' is registered but unavailable: "
                    f"{device.backend.unavailable_reason() or 'no reason given'}")
    return device


def selected_cases(config: pytest.Config) -> list[Case]:
    """The database samples of the chosen dtypes (none without ``--backend``)."""
    if not config.getoption("--backend", default=None):
        return []
    return sample_cases(records(config), dtypes(config))


def selected_errors(config: pytest.Config) -> list[tuple[OpRecord, ErrorCase]]:
    """The database's error cases (none without ``--backend``)."""
    if not config.getoption("--backend", default=None):
        return []
    return error_cases(records(config))


def check_sample(device: Any, case: Case) -> Outcome:
    """Run ``case`` on ``device`` and on the CPU with the same cotangents; compare everything."""
    record, sample = case.record, case.sample
    double = record.differentiable and case.dtype == "float64" and sample.gradcheck
    runs = []
    for where in (device, "cpu"):
        framework = PullbackFramework(where)
        bound = sample.bind(framework.factory, differentiable=record.differentiable)
        rng = np.random.default_rng(case_seed(record, case.dtype, sample))
        runs.append(run_sample(framework, record.fn, bound, rng,
                               backward=record.differentiable, double=double))
    outcome = compare_runs(runs[0], runs[1], overrides=record.tolerance, expected_name="cpu")
    _check_devices(outcome, device, runs[0].devices)
    return outcome


def _check_devices(outcome: Outcome, device: Any, devices: list[str] | None) -> None:
    for i, d in enumerate(devices or []):
        if d != str(device):
            outcome.problems.append(f"result {i} is on {d}, expected {device}")


def check_error(device: Any, record: OpRecord, case: ErrorCase) -> None:
    """The error case must raise its error type on ``device`` too (an AssertionError if not).

    Only the type is checked: the end of a message may quote the backend's own library.
    """
    problem = error_case_problem(record, case, device, check_message=False)
    if problem:
        raise AssertionError(f"{record.name} {case.id} on {device}: {problem}")
