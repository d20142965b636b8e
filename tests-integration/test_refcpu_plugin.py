"""A third-party backend plugin, installed with pip next to core: discovered through its entry
point, listed by the CLI, used for real math forward and backward, checked by the backend
conformance suite, and uninstalled again without harm to core."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytestmark = pytest.mark.venv


@pytest.fixture
def refcpu_venv(make_venv: Any, wheelhouse: Any) -> Any:
    venv = make_venv("refcpu")
    venv.install(wheelhouse.wheel("pullback"), wheelhouse.wheel("pullback-refcpu"))
    return venv


def plugin_rows(venv: Any) -> dict[str, dict[str, Any]]:
    result = venv.run("-m", "pullback", "plugins", "--json")
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)["plugins"]}


def test_the_cli_lists_the_installed_backend(refcpu_venv: Any) -> None:
    rows = plugin_rows(refcpu_venv)
    assert set(rows) == {"pullback", "refcpu"}
    refcpu = rows["refcpu"]
    assert (refcpu["distribution"], refcpu["version"], refcpu["status"]) == \
        ("pullback-refcpu", "0.1.0", "loaded")
    assert refcpu["registered"] == {
        "backends": [{"name": "refcpu", "available": True, "device_count": 2, "reason": None,
                      "gemm": None}],
        "kernels": ["exp[refcpu]"],
    }


def test_forward_and_backward_run_on_the_plugin_backend(refcpu_venv: Any) -> None:
    # The oracle is the same function's derivative written out by hand in NumPy.
    result = refcpu_venv.python_ok('''
        import json
        import numpy as np
        import pullback as pb
        import pullback_refcpu

        rng = np.random.default_rng(0)
        x0, w0 = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
        pullback_refcpu.reset_kernel_calls()
        x = pb.tensor(x0, device="refcpu:1", requires_grad=True)
        w = pb.tensor(w0, device="refcpu:1", requires_grad=True)
        y = (x @ w).tanh()
        loss = (y * y).sum() + x.exp().mean()
        loss.backward()

        y0 = np.tanh(x0 @ w0)
        dz = 2 * y0 * (1 - y0**2)
        expected = {"loss": float((y0**2).sum() + np.exp(x0).mean()),
                    "dx": dz @ w0.T + np.exp(x0) / x0.size, "dw": x0.T @ dz}
        print(json.dumps({
            "devices": [str(t.device) for t in (loss, x.grad, w.grad)],
            "loss_error": abs(loss.item() - expected["loss"]),
            "dx_error": float(np.abs(x.grad.numpy() - expected["dx"]).max()),
            "dw_error": float(np.abs(w.grad.numpy() - expected["dw"]).max()),
            "calls": pullback_refcpu.kernel_calls(),
        }))
        pullback_refcpu.reset_kernel_calls()
        (pb.tensor(x0, requires_grad=True).tanh().sum()).backward()
        assert pullback_refcpu.kernel_calls() == {}, "CPU work must not run refcpu kernels"
    ''')
    out = json.loads(result.stdout)
    assert out["devices"] == ["refcpu:1"] * 3
    assert out["loss_error"] < 1e-12 and out["dx_error"] < 1e-12 and out["dw_error"] < 1e-12
    calls = out["calls"]
    # matmul: once forward, once per input in backward; exp through the plugin's own kernel.
    assert calls["matmul"] == 3
    assert calls["tanh"] == 1 and calls["exp"] >= 1
    assert {"mul", "sum", "add"} <= set(calls)


def test_the_backend_passes_the_conformance_suite(refcpu_venv: Any) -> None:
    probe = refcpu_venv.run("-c", "import pullback.testing.conformance")
    if probe.returncode != 0:
        pytest.skip("pullback.testing.conformance is not in this core yet: "
                    + probe.stderr.strip().splitlines()[-1])
    result = refcpu_venv.run("-m", "pytest", "-p", "pullback.testing.conformance",
                             "--backend", "refcpu", "-q", "-p", "no:cacheprovider")
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    summary = result.stdout.strip().splitlines()[-1]
    assert re.search(r"\b\d+ passed\b", summary) and not re.search(r"\b\d+ failed\b", summary), \
        summary


def test_uninstalling_the_plugin_leaves_core_working(refcpu_venv: Any) -> None:
    assert "refcpu" in plugin_rows(refcpu_venv)
    refcpu_venv.uninstall("pullback-refcpu")
    assert set(plugin_rows(refcpu_venv)) == {"pullback"}
    result = refcpu_venv.python_ok('''
        import pullback as pb
        from pullback.errors import DeviceError
        x = pb.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * x).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0, 6.0]
        try:
            pb.Device("refcpu")
        except DeviceError as exc:
            print(exc)
    ''')
    assert result.stdout.startswith("unknown device type 'refcpu' (registered: cpu)")
    assert result.stderr == ""
