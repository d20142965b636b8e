"""The float32 erf and normal CDF behind GELU on the CPU: accuracy against the exact functions,
special values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import erf, ndtr

import pullback as pb
from pullback._ops._erf32 import erf32, phi32

GRID = np.concatenate([np.linspace(-6, 6, 1 << 20, dtype=np.float32),
                       np.float32([1e-30, -1e-38, 1e-5, -3.999, 4.0, 4.001])])


def test_erf32_is_within_its_documented_ulps():
    exact = erf(GRID.astype(np.float64))
    ulps = np.abs(erf32(GRID) - exact) / np.spacing(np.abs(exact).astype(np.float32))
    assert ulps.max() <= 7.5


def test_erf32_special_values():
    """Zeros keep their sign, NaN propagates; from |x| = 3.9 on the result is exactly +-1 (the
    correctly rounded value there)."""
    got = erf32(np.float32([np.nan, 0.0, -0.0, np.inf, -np.inf, 40.0, 3.9, -3.95]))
    assert got.dtype == np.float32 and np.isnan(got[0])
    assert got[1] == 0 and not np.signbit(got[1]) and got[2] == 0 and np.signbit(got[2])
    np.testing.assert_array_equal(got[3:], [1, -1, 1, 1, -1])


def test_phi32_is_within_its_ulps_and_has_no_cancelling_tail():
    """Above x = -1 phi32 is (1 + erf32) / 2 (6 ulp); below, erfc keeps the error relative
    (26 ulp down to -5), where (1 + erf) / 2 would lose every digit in the tail."""
    x = np.linspace(-5, 6, 1 << 20, dtype=np.float32)
    exact = ndtr(x.astype(np.float64))
    ulps = np.abs(phi32(x) - exact) / np.spacing(exact.astype(np.float32))
    assert ulps[x > -1].max() <= 6.5
    assert ulps.max() <= 26
    deep = np.float32([-8.0, -10.0, -12.0])
    np.testing.assert_allclose(phi32(deep), ndtr(deep.astype(np.float64)), rtol=1e-4)


def test_phi32_special_values():
    got = phi32(np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 40.0, -40.0]))
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:], [1, 0, 0.5, 0.5, 1, 0])


def test_erf_op_stays_exact_in_float32():
    got = pb.erf(pb.tensor(GRID)).numpy()
    np.testing.assert_array_equal(got, erf(GRID))


def _exact_gelu_slope(x):
    return ndtr(x) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)


@pytest.mark.parametrize("size", [1000, 1 << 20], ids=["numpy-kernel", "native-threaded"])
def test_float32_gelu_and_its_gradient_stay_accurate(size):
    """GELU keeps a relative bound over the whole range, the negative tail included (a GELU
    built on 0.5 (1 + erf), PyTorch's too, only keeps an absolute one there); the slope crosses
    zero near x = -0.75, so its relative bound holds where |slope| > 1e-3."""
    x = np.linspace(-8, 8, size, dtype=np.float32)
    x64 = x.astype(np.float64)
    t = pb.tensor(x, requires_grad=True)
    y = pb.gelu(t)
    y.sum().backward()
    assert y.dtype == pb.float32
    exact = x64 * ndtr(x64)
    assert (np.abs(y.detach().numpy() - exact) / np.maximum(np.abs(exact), 1e-30)).max() <= 5e-6
    slope = _exact_gelu_slope(x64)
    error = np.abs(t.grad.numpy() - slope)
    assert error.max() <= 4e-7
    assert (error / np.abs(slope))[np.abs(slope) > 1e-3].max() <= 1e-4
