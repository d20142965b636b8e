"""The test-side check against Monte Carlo (pramana.monte_carlo): a correct answer lies within a
few standard errors of the sampled moments."""

from __future__ import annotations

import numpy as np

from pullback.pramana import DistributionalTensor, SampledMoments, monte_carlo

__all__ = ["Z", "assert_within_sampling_error", "monte_carlo", "relative_discrepancy"]

# Each test compares many elements at once: five standard errors keep the chance of a false
# failure across a whole test far below one in ten thousand.
Z = 5.0


def assert_within_sampling_error(got: DistributionalTensor, ref: SampledMoments,
                                 slack: float = 0.0) -> None:
    """Both streams within Z standard errors of Monte Carlo (plus ``slack`` relative, for the
    approximations)."""
    mean, var = got.mean.detach().numpy(), got.var.detach().numpy()
    scale_m = np.abs(ref.mean) + np.sqrt(ref.var)
    bad_m = np.abs(mean - ref.mean) > Z * ref.mean_err + slack * scale_m
    bad_v = np.abs(var - ref.var) > Z * ref.var_err + slack * ref.var
    for stream, bad, ours, theirs in (("mean", bad_m, mean, ref.mean), ("var", bad_v, var, ref.var)):
        assert not bad.any(), (f"{stream} off at {np.argwhere(bad)[:3].tolist()}: "
                               f"{ours[bad][:3]} vs Monte Carlo {theirs[bad][:3]}")


def relative_discrepancy(got: DistributionalTensor, ref: SampledMoments) -> tuple[float, float]:
    """Max relative error of the mean (against mean scale |m| + sd) and of the variance."""
    rel_m, rel_v = ref.relative_error(got)
    return float(rel_m.max()), float(rel_v.max())
