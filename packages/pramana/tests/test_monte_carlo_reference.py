"""pramana.monte_carlo, the reference every moment rule is tested against, checked against closed
forms: its moments within their own standard errors, and those errors of the right size."""

import numpy as np

import pullback as pb
from pullback import pramana as pr


def _gaussian(mean, var):
    return pr.DistributionalTensor(pb.tensor(np.asarray(mean, float)),
                                   pb.tensor(np.asarray(var, float)))


def test_moments_of_a_square_match_the_closed_form_within_their_errors():
    mu, s2 = np.array([[0.0, 1.5, -2.0]]), np.array([[1.0, 0.25, 2.0]])
    ref = pr.monte_carlo(lambda t: t * t, _gaussian(mu, s2), samples=200_000, seed=3)
    # E[x^2] = mu^2 + s^2, Var[x^2] = 2 s^4 + 4 mu^2 s^2 for x ~ N(mu, s^2).
    mean, var = mu**2 + s2, 2 * s2**2 + 4 * mu**2 * s2
    assert (np.abs(ref.mean - mean) < 5 * ref.mean_err).all()
    assert (np.abs(ref.var - var) < 5 * ref.var_err).all()
    # The standard errors themselves: sqrt(Var / n) for the mean.
    np.testing.assert_allclose(ref.mean_err, np.sqrt(var / 200_000), rtol=0.05)


def test_errors_shrink_as_one_over_root_samples_and_chunks_do_not_matter():
    x = _gaussian([[0.3, -1.0]], [[0.5, 2.0]])
    small = pr.monte_carlo(pb.tanh, x, samples=10_000, seed=1)
    large = pr.monte_carlo(pb.tanh, x, samples=160_000, seed=1)
    np.testing.assert_allclose(small.mean_err / large.mean_err, 4.0, rtol=0.1)
    chunked = pr.monte_carlo(pb.tanh, x, samples=10_000, seed=1, chunk=999)
    np.testing.assert_allclose(chunked.mean, small.mean, rtol=1e-12)
    np.testing.assert_allclose(chunked.var, small.var, rtol=1e-10)


def test_relative_error_is_scaled_by_mean_plus_sd_and_by_the_variance():
    ref = pr.SampledMoments(np.array([0.0, 2.0]), np.array([4.0, 1.0]), np.zeros(2), np.zeros(2))
    got = _gaussian([0.5, 2.5], [5.0, 1.5])
    rel_m, rel_v = ref.relative_error(got)
    np.testing.assert_allclose(rel_m, [0.5 / 2.0, 0.5 / 3.0])
    np.testing.assert_allclose(rel_v, [0.25, 0.5])
