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


def test_phi32_is_within_its_ulps_above_minus_one_and_absolute_below():
    """(1 + erf32) / 2: 6 ulp where the sum does not cancel, an absolute bound in the tail."""
    x = np.linspace(-8, 6, 1 << 20, dtype=np.float32)
    exact = ndtr(x.astype(np.float64))
    error = np.abs(phi32(x) - exact)
    assert (error / np.spacing(exact.astype(np.float32)))[x > -1].max() <= 6.5
    assert error.max() <= 3e-7


def test_phi32_special_values():
    got = phi32(np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 40.0, -40.0]))
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:], [1, 0, 0.5, 0.5, 1, 0])


def test_erf_op_stays_exact_in_float32():
    got = pb.erf(pb.tensor(GRID)).numpy()
    np.testing.assert_array_equal(got, erf(GRID))


def _exact_gelu(x):
    return x * ndtr(x)


def _exact_gelu_slope(x):
    return ndtr(x) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi)


@pytest.mark.parametrize("size", [1000, 1 << 20], ids=["numpy-kernel", "native-threaded"])
def test_float32_gelu_and_its_gradient_stay_accurate(size):
    """0.5 (1 + erf) loses relative precision for negative x in any float32 GELU (PyTorch's too):
    the bound is absolute, scaled by 1 + |x| (PyTorch 2.13 measures 9e-8 and 2.6e-7 here)."""
    x = np.linspace(-8, 8, size, dtype=np.float32)
    x64 = x.astype(np.float64)
    t = pb.tensor(x, requires_grad=True)
    y = pb.gelu(t)
    y.sum().backward()
    assert y.dtype == pb.float32
    assert (np.abs(y.detach().numpy() - _exact_gelu(x64)) / (1 + np.abs(x64))).max() <= 3e-7
    assert np.abs(t.grad.numpy() - _exact_gelu_slope(x64)).max() <= 4e-7


def test_float32_gelu_is_zero_far_in_the_negative_tail():
    """erf32 is exactly -1 there, so 1 + erf does not leave a residue that |x| would scale."""
    x = -np.logspace(1, 30, 2048, dtype=np.float32)
    y = pb.gelu(pb.tensor(x)).numpy()
    assert (y == 0).all()
