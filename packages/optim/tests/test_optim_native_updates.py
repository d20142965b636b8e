"""The C pass behind ``target += alpha * source`` (SGD's and Lion's update, Adam's ratio step):
NumPy's two passes' bits, and NumPy's passes wherever it does not apply."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import native
from pullback.optim import SGD
from pullback.optim._kernels import add_scaled_
from pullback.optim._native import adadelta as native_adadelta
from pullback.optim._native import adam as native_adam
from pullback.optim._native import add_scaled

needs_native = pytest.mark.skipif(not native.enabled(),
                                  reason="native kernels are off (PULLBACK_NATIVE=0)")


def _numpy_two_passes(target: np.ndarray, source: np.ndarray, alpha: float) -> np.ndarray:
    out = target.copy()
    np.add(out, np.multiply(source, alpha), out=out)
    return out


@needs_native
@pytest.mark.parametrize("n", [1024, 4099, 200_704])
@pytest.mark.parametrize("alpha", [-0.01, 0.1234567, -1e-30, 3e38])
def test_one_pass_gives_numpys_two_passes_bits(n: int, alpha: float) -> None:
    rng = np.random.default_rng(n)
    target = rng.standard_normal(n).astype(np.float32)
    source = (rng.standard_normal(n) * 100).astype(np.float32)
    source[:4] = [np.nan, np.inf, -np.inf, -0.0]
    expected = _numpy_two_passes(target, source, alpha)
    assert add_scaled(target, source, alpha)
    np.testing.assert_array_equal(target.view(np.int32), expected.view(np.int32))


@needs_native
def test_it_declines_what_it_does_not_cover() -> None:
    """Other dtypes, small or strided arrays, other shapes, overlapping or read-only operands
    are left to NumPy, untouched."""
    big = np.ones(4096, np.float32)
    read_only = np.ones(4096, np.float32)
    read_only.flags.writeable = False
    cases = [(big.astype(np.float64), big.astype(np.float64)), (big[:100], big[:100].copy()),
             (np.ones(8192, np.float32)[::2], big), (big.reshape(64, 64), big),
             (big, big), (big[1:], big[:-1]), (read_only, big)]
    for target, source in cases:
        before = target.copy()
        assert not add_scaled(target, source, 0.5)
        np.testing.assert_array_equal(target, before)


@needs_native
def test_the_helper_gives_the_same_bits_either_way(monkeypatch) -> None:
    """``add_scaled_`` with the C pass and with it turned off (as without a compiler)."""
    rng = np.random.default_rng(3)
    source = rng.standard_normal((300, 50)).astype(np.float32)
    with_c = rng.standard_normal((300, 50)).astype(np.float32)
    without_c = with_c.copy()
    add_scaled_(np, with_c, source, -0.03, np.empty_like(source))
    monkeypatch.setattr("pullback.optim._kernels.add_scaled", lambda *a: False)
    add_scaled_(np, without_c, source, -0.03, np.empty_like(source))
    np.testing.assert_array_equal(with_c.view(np.int32), without_c.view(np.int32))


def test_an_sgd_step_on_a_large_parameter_is_torchs() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal((256, 784)).astype(np.float32)
    g0 = rng.standard_normal((256, 784)).astype(np.float32)
    p = pb.tensor(w0.copy(), requires_grad=True)
    p.grad = pb.tensor(g0)
    q = torch.tensor(w0.copy(), requires_grad=True)
    q.grad = torch.tensor(g0)
    for opt in (SGD([p], lr=0.05, momentum=0.9), torch.optim.SGD([q], lr=0.05, momentum=0.9)):
        opt.step()
        opt.step()
    np.testing.assert_allclose(p.array, q.detach().numpy(), rtol=0, atol=1e-6)


@pytest.mark.parametrize("weight_decay, maximize", [(0.0, False), (0.01, True)])
@needs_native
def test_adadelta_gives_the_same_bits_with_and_without_the_c_pass(monkeypatch, weight_decay,
                                                                  maximize) -> None:
    """Three Adadelta steps on a float32 parameter large enough for the C pass, against the same
    steps with the C pass turned off (NumPy's passes, as without a compiler)."""
    from pullback.optim import Adadelta

    rng = np.random.default_rng(7)
    w0 = rng.standard_normal((64, 300)).astype(np.float32)
    grads = [rng.standard_normal((64, 300)).astype(np.float32) for _ in range(3)]

    def run() -> np.ndarray:
        p = pb.tensor(w0.copy(), requires_grad=True)
        opt = Adadelta([p], lr=0.7, rho=0.85, weight_decay=weight_decay, maximize=maximize)
        for g in grads:
            p.grad = pb.tensor(g)
            opt.step()
        return np.concatenate([p.array.ravel(), opt.state[p]["square_avg"].array.ravel(),
                               opt.state[p]["acc_delta"].array.ravel()])

    fused = []
    monkeypatch.setattr("pullback.optim.adadelta.adadelta",
                        lambda *a: fused.append(native_adadelta(*a)) or fused[-1])
    with_c = run()
    assert fused == [True] * 3
    monkeypatch.setattr("pullback.optim.adadelta.adadelta", lambda *a: False)
    np.testing.assert_array_equal(with_c.view(np.int32), run().view(np.int32))


@pytest.mark.parametrize("name, kwargs", [
    ("Adam", {}), ("Adam", {"weight_decay": 0.01}), ("AdamW", {"weight_decay": 0.1}),
    ("AdamW", {"weight_decay": 0.0, "betas": (0.8, 0.95), "eps": 1e-6}),
    ("Adam", {"amsgrad": True}), ("AdamW", {"maximize": True}),  # NumPy's passes both times
])
@needs_native
def test_adam_gives_the_same_bits_with_and_without_the_c_pass(monkeypatch, name, kwargs) -> None:
    """Four steps on a float32 parameter large enough for the C pass, against the same steps
    with it turned off; the moments and the step count too."""
    from pullback import optim

    rng = np.random.default_rng(11)
    w0 = rng.standard_normal((128, 100)).astype(np.float32)
    grads = [rng.standard_normal((128, 100)).astype(np.float32) for _ in range(4)]

    def run() -> tuple[np.ndarray, int]:
        p = pb.tensor(w0.copy(), requires_grad=True)
        opt = getattr(optim, name)([p], lr=3e-3, **kwargs)
        for g in grads:
            p.grad = pb.tensor(g)
            opt.step()
        state = opt.state[p]
        return (np.concatenate([p.array.ravel(), state["exp_avg"].array.ravel(),
                                state["exp_avg_sq"].array.ravel()]), state["step"])

    fused = []
    monkeypatch.setattr("pullback.optim.adam.adam",
                        lambda *a, **k: fused.append(native_adam(*a, **k)) or fused[-1])
    with_c, steps = run()
    assert fused == ([] if kwargs.get("amsgrad") or kwargs.get("maximize") else [True] * 4)
    monkeypatch.setattr("pullback.optim.adam.adam", lambda *a, **k: False)
    without_c, steps_without = run()
    assert steps == steps_without == 4
    np.testing.assert_array_equal(with_c.view(np.int32), without_c.view(np.int32))
