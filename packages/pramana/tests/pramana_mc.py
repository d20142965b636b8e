"""Monte Carlo reference moments, with the sampling error that bounds a correct answer."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import pullback as pb
from pullback.pramana import DistributionalTensor

SAMPLES = 100_000
# Each test compares many elements at once: five standard errors keep the chance of a false
# failure across a whole test far below one in ten thousand.
Z = 5.0


@dataclass
class Moments:
    mean: np.ndarray
    var: np.ndarray
    mean_err: np.ndarray  # standard error of the sample mean
    var_err: np.ndarray  # standard error of the sample variance


def monte_carlo(fn, x: DistributionalTensor, samples: int = SAMPLES, seed: int = 0,
                chunk: int = 20_000) -> Moments:
    """Moments of ``fn(sample)`` over ``samples`` Gaussian draws of ``x``, in chunks (fn sees a
    batch of draws on a new leading axis folded into the batch axis)."""
    rng = np.random.default_rng(seed)
    mu, sd = x.mean.numpy(), np.sqrt(x.var.numpy())
    total = total2 = total3 = total4 = None
    n = 0
    shift = None
    for start in range(0, samples, chunk):
        k = min(chunk, samples - start)
        draws = mu + sd * rng.standard_normal((k, *mu.shape))
        with pb.no_grad():
            out = fn(pb.tensor(draws.reshape(k * mu.shape[0], *mu.shape[1:]))).numpy()
        out = out.reshape(k, mu.shape[0], *out.shape[1:])
        if shift is None:
            shift = out.mean(axis=0)  # centre the sums for accuracy
        d = out - shift
        sums = [d.sum(0), (d**2).sum(0), (d**3).sum(0), (d**4).sum(0)]
        if total is None:
            total, total2, total3, total4 = sums
        else:
            total, total2, total3, total4 = (a + b for a, b in zip((total, total2, total3, total4), sums))
        n += k
    m1 = total / n
    mean = shift + m1
    c2 = total2 / n - m1**2
    c4 = total4 / n - 4 * m1 * total3 / n + 6 * m1**2 * total2 / n - 3 * m1**4
    var = c2 * n / (n - 1)
    return Moments(mean, var, np.sqrt(var / n), np.sqrt(np.maximum(c4 - c2**2, 0) / n))


def assert_within_sampling_error(got: DistributionalTensor, ref: Moments, slack: float = 0.0):
    """Both streams within Z standard errors of Monte Carlo (plus ``slack`` relative, for the
    approximations)."""
    mean, var = got.mean.detach().numpy(), got.var.detach().numpy()
    scale_m = np.abs(ref.mean) + np.sqrt(ref.var)
    bad_m = np.abs(mean - ref.mean) > Z * ref.mean_err + slack * scale_m
    bad_v = np.abs(var - ref.var) > Z * ref.var_err + slack * ref.var
    for stream, bad, ours, theirs in (("mean", bad_m, mean, ref.mean), ("var", bad_v, var, ref.var)):
        assert not bad.any(), (f"{stream} off at {np.argwhere(bad)[:3].tolist()}: "
                               f"{ours[bad][:3]} vs Monte Carlo {theirs[bad][:3]}")


def relative_discrepancy(got: DistributionalTensor, ref: Moments) -> tuple[float, float]:
    """Max relative error of the mean (against mean scale |m| + sd) and of the variance."""
    mean, var = got.mean.detach().numpy(), got.var.detach().numpy()
    rel_m = np.abs(mean - ref.mean) / (np.abs(ref.mean) + np.sqrt(ref.var))
    rel_v = np.abs(var - ref.var) / ref.var
    return float(rel_m.max()), float(rel_v.max())
