"""The C pass behind ``target += alpha * source`` (SGD's and Lion's update, Adam's ratio step):
NumPy's two passes' bits, and NumPy's passes wherever it does not apply."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import native
from pullback.optim import SGD
from pullback.optim._kernels import add_scaled_
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
