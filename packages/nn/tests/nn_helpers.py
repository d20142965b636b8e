"""Helpers shared by pullback.nn's tests: PyTorch as the oracle, tolerance per dtype.

(A uniquely named module rather than conftest.py, which every package's tests have.)"""

from __future__ import annotations

from typing import Any

import numpy as np
import pullback
import pullback.nn  # noqa: F401 - registers the nn ops even with plugin autoloading disabled

# float64 parity is held to 1e-10; float32 to what its rounding allows.
TOL = {"float64": dict(rtol=1e-10, atol=1e-10), "float32": dict(rtol=2e-4, atol=2e-5)}


def to_numpy(t) -> np.ndarray:
    """A pullback or torch tensor as a NumPy array."""
    if isinstance(t, pullback.Tensor):
        return np.asarray(t.detach())
    return t.detach().cpu().numpy()


def assert_close(ours, theirs, dtype: str = "float64", what: str = "", scale: float = 1.0):
    """Compare a pullback tensor with a torch tensor (or arrays) at the dtype's tolerance."""
    tol = TOL[dtype]
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=tol["rtol"] * scale,
                               atol=tol["atol"] * scale, err_msg=what)


def copy_torch_weights(ours, theirs) -> None:
    """Load a torch module's state dict into ours (through NumPy), which also exercises
    load_state_dict's round trip."""
    ours.load_state_dict({k: v.detach().cpu().numpy() for k, v in theirs.state_dict().items()})


def gradchecks():
    """pullback.testing's gradcheck and gradgradcheck (finite differences in float64)."""
    from pullback.testing.gradcheck import gradcheck, gradgradcheck

    return gradcheck, gradgradcheck


def assert_parameter_grads_and_buffers_close(ours: Any, theirs: Any, dtype: Any, what: str,
                                             mode: str) -> None:
    """Each parameter's gradient (None exactly where torch's is) and each buffer of a pullback
    Module against its torch twin after a backward."""
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        if t_params[name].grad is None:
            assert p.grad is None, f"{what}: {name} got a gradient torch does not have"
            continue
        assert_close(p.grad, t_params[name].grad, dtype, f"{what} grad of {name} ({mode})")
    t_buffers = dict(theirs.named_buffers())
    for name, b in ours.named_buffers():
        assert_close(b, t_buffers[name], dtype, f"{what} buffer {name} ({mode})")
