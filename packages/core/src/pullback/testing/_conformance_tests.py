"""The test items of the backend conformance suite, collected by the plugin
:mod:`pullback.testing.conformance` when ``--backend`` is given (see there for the command)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pullback.testing import conformance
from pullback.testing.opdb import Case, ErrorCase, OpRecord
from pullback.testing.opdb._inputs import ALL, values


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        cases = conformance.selected_cases(metafunc.config)
        metafunc.parametrize("case", cases, ids=[c.id for c in cases])
    if "error" in metafunc.fixturenames:
        errors = conformance.selected_errors(metafunc.config)
        metafunc.parametrize("error", errors, ids=[f"{r.name}-{e.id}" for r, e in errors])
    if "dtype" in metafunc.fixturenames:
        chosen = conformance.dtypes(metafunc.config)
        metafunc.parametrize("dtype", [d for d in ALL if d in chosen])


def test_forward_and_gradients_match_the_cpu(case: Case, conformance_device: Any) -> None:
    conformance.check_sample(conformance_device, case).check(
        f"{case.id} on {conformance_device} against cpu")


def test_bad_input_raises_the_same_error(error: tuple[OpRecord, ErrorCase],
                                         conformance_device: Any) -> None:
    conformance.check_error(conformance_device, *error)


def test_to_the_device_and_back_keeps_values_and_dtype(dtype: str, conformance_device: Any) -> None:
    import pullback as pb

    x = pb.tensor(values((2, 3), pb.dtypes.to_dtype(dtype), np.random.default_rng(0)))
    moved = x.to(conformance_device)
    assert moved.device == conformance_device and moved.dtype == x.dtype
    back = moved.to("cpu")
    assert back.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(back), np.asarray(x))


@pytest.mark.parametrize("float_dtype", ["float16", "bfloat16", "float32", "float64"])
def test_gradients_flow_back_through_to(float_dtype: str, conformance_device: Any,
                                        request: pytest.FixtureRequest) -> None:
    import pullback as pb

    if float_dtype not in conformance.dtypes(request.config):
        pytest.skip(f"{float_dtype} is not among --conformance-dtypes")
    x = pb.ones(2, 3, dtype=float_dtype, requires_grad=True)
    pb.sum(x.to(conformance_device) * 3).backward()
    assert x.grad is not None and x.grad.device == x.device
    np.testing.assert_array_equal(np.asarray(x.grad, dtype=np.float64), np.full((2, 3), 3.0))


def test_mixing_devices_in_one_op_is_a_device_error(conformance_device: Any) -> None:
    import pullback as pb
    from pullback.errors import DeviceError

    if conformance_device.type == "cpu":
        pytest.skip("the backend under test is the CPU itself")
    x = pb.ones(2, 3)
    with pytest.raises(DeviceError, match=f"add.*cpu.*{conformance_device}"):
        pb.add(x, x.to(conformance_device))
