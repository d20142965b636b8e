"""Sampled moments of a function of a Gaussian, with their standard errors: the reference that
pramana's rules are checked against, public so that a user can check a moment rule of their own
(``register_moment_rule``) the same way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import pullback
from pullback import Tensor

from ._tensor import DistributionalTensor


@dataclass
class SampledMoments:
    """Monte Carlo moments of each output element.

    Attributes:
        mean: the sample mean.
        var: the unbiased sample variance.
        mean_err: the standard error of ``mean``.
        var_err: the standard error of ``var`` (from the fourth central moment).
    """

    mean: np.ndarray
    var: np.ndarray
    mean_err: np.ndarray
    var_err: np.ndarray

    def relative_error(self, got: DistributionalTensor) -> tuple[np.ndarray, np.ndarray]:
        """``got``'s error per element: of the mean against the output's scale ``|mean| + sd``
        (an error relative to the mean alone is meaningless where the mean is near zero), and
        of the variance against the variance."""
        mean, var = got.mean.detach().numpy(), got.var.detach().numpy()
        return (np.abs(mean - self.mean) / (np.abs(self.mean) + np.sqrt(self.var)),
                np.abs(var - self.var) / self.var)


def monte_carlo(fn: Callable[[Tensor], Tensor], x: DistributionalTensor, samples: int = 100_000,
                seed: int = 0, chunk: int = 20_000) -> SampledMoments:
    """Moments of ``fn(sample)`` over ``samples`` independent Gaussian draws of ``x``.

    Args:
        fn: the deterministic function (a layer, a model); it receives a chunk of draws with the
            draws folded into the batch axis (shape ``(k * batch, *x.shape[1:])``).
        x: the input distribution (its mean and variance are read as float64).
        samples: the number of draws.
        seed: the NumPy seed of the draws (``fn``'s own randomness uses pullback's generator).
        chunk: draws evaluated per call of ``fn``, bounding memory.

    Returns:
        The sampled moments, with the standard errors that bound a correct analytic answer.
    """
    rng = np.random.default_rng(seed)
    mu, sd = x.mean.detach().numpy(), np.sqrt(x.var.detach().numpy())
    sums = None
    shift = None
    for start in range(0, samples, chunk):
        k = min(chunk, samples - start)
        draws = mu + sd * rng.standard_normal((k, *mu.shape))
        with pullback.no_grad():
            out = fn(pullback.tensor(draws.reshape(k * mu.shape[0], *mu.shape[1:]))).numpy()
        out = out.reshape(k, mu.shape[0], *out.shape[1:]).astype(np.float64)
        if shift is None:
            shift = out.mean(axis=0)  # the sums are of deviations from a first estimate: accuracy
        d = out - shift
        chunk_sums = [d.sum(0), (d**2).sum(0), (d**3).sum(0), (d**4).sum(0)]
        sums = chunk_sums if sums is None else [a + b for a, b in zip(sums, chunk_sums)]
    s1, s2, s3, s4 = (s / samples for s in sums)
    c2 = s2 - s1**2
    c4 = s4 - 4 * s1 * s3 + 6 * s1**2 * s2 - 3 * s1**4
    var = c2 * samples / (samples - 1)
    return SampledMoments(shift + s1, var, np.sqrt(var / samples),
                          np.sqrt(np.maximum(c4 - c2**2, 0) / samples))
