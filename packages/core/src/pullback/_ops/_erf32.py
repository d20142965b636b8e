"""The error function and the normal CDF inside GELU for float32 NumPy arrays.

SciPy's ``erf`` evaluates float32 input in double precision through Cephes, about 17 ns per
element: in the GPT's training step the exact GELU (forward and backward, mostly its ``erf``)
took about as long as all the matrix products. ``x P(x^2) / Q(x^2)``, two dozen in-place NumPy
passes over cache-sized blocks, takes about 3 ns per element and is within 7.2 float32 ulp
(4.7e-7 absolute) of the exact value: rounding in the float32 Horner steps, not the fit
(1.25 ulp), sets that bound; from |x| = 3.9 on the result is exactly +-1, the correctly rounded
value. An activation can afford it (GELU's own error stays a few ulp), so only GELU uses it; the
public ``erf`` op keeps SciPy's correctly rounded result.

GELU needs ``Phi(x) = (1 + erf(x / sqrt 2)) / 2`` (:func:`phi32`). Below about ``x = -3`` the
sum cancels and erf's absolute error stays absolute (a few 1e-7, as in PyTorch's float32 GELU);
an erfc branch there keeps it relative but measured 2.3 times slower in C, so GELU does without.
``pullback/_csrc/pullback_math.h`` holds the same functions in C for the native kernels.

The coefficients of erf come from ``tools/fit_erf32.py`` (lowest degree first), which also
measures the error and the time per element against SciPy's.
"""

from __future__ import annotations

import numpy as np

_P = np.array([1.1283792, 0.1703032, 0.060953032, 0.004386852, 0.0007453728, 1.4642305e-05,
               -6.302634e-08], dtype=np.float32)
_Q = np.array([1.0, 0.484262, 0.11542941, 0.017770348, 0.0019138246, 0.00015809332],
              dtype=np.float32)
# erf(4) rounds to 1 in float32: clamping there keeps the polynomials in their fitted range.
_LIMIT = np.float32(4.0)
# From here on float32's correctly rounded erf is +-1 (erf(3.9) = 1 - 3.5e-8); the fit would
# overshoot it by an ulp or two, which 1 + erf(x) in GELU's negative tail turns into an absolute
# error growing with |x|.
_ONE_FROM = np.float32(3.9)


def _horner(coefficients: np.ndarray, t: np.ndarray) -> np.ndarray:
    acc = t * coefficients[-1]
    for c in coefficients[-2:0:-1]:
        acc += c
        acc *= t
    acc += coefficients[0]
    return acc


def erf32(x: np.ndarray) -> np.ndarray:
    """erf of a float32 array (NaN stays NaN, +-inf gives +-1)."""
    shape = x.shape
    x = np.clip(x.reshape(-1), -_LIMIT, _LIMIT)  # 1-d: NumPy turns 0-d results into scalars
    t = x * x
    out = _horner(_P, t)
    out *= x
    out /= _horner(_Q, t)
    np.putmask(out, t >= _ONE_FROM * _ONE_FROM, np.sign(x))
    return out.reshape(shape)


def phi32(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF of a float32 array, ``(1 + erf32(x / sqrt 2)) / 2``."""
    out = erf32(x * np.float32(0.70710678118654752))
    out += np.float32(1.0)
    out *= np.float32(0.5)
    return out
