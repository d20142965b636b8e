"""Encoders and decoders: direct currents are views whose gradient sums over time; rate trains
are reproducible from a seed and fire at the requested probability; latency codes and both
decoders' predictions match snnTorch's spikegen and accuracy functions."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import spanda
from pullback.errors import ShapeError


def test_direct_is_a_view_and_its_gradient_sums_over_time() -> None:
    data = pullback.rand(3, 4, requires_grad=True)
    x = spanda.encode.direct(data, 5)
    assert x.shape == (5, 3, 4) and x.array.strides[0] == 0
    (x * pullback.arange(5, dtype=pullback.float32).reshape(5, 1, 1)).sum().backward()
    np.testing.assert_allclose(data.grad.numpy(), np.full((3, 4), 10.0))


def test_rate_fires_at_the_data_as_probability_reproducibly() -> None:
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.7, -0.2])
    data = pullback.tensor(p)
    a = spanda.encode.rate(data, 4000, generator=7)
    b = spanda.encode.rate(data, 4000, generator=np.random.default_rng(7))
    c = spanda.encode.rate(data, 4000, generator=8)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())
    assert set(np.unique(a.numpy())) <= {0.0, 1.0} and a.dtype == data.dtype
    expected = np.clip(p, 0, 1)
    sigma = np.sqrt(expected * (1 - expected) / 4000)
    assert np.all(np.abs(a.numpy().mean(axis=0) - expected) <= 5 * sigma + 1e-12)
    half = spanda.encode.rate(pullback.ones(1000), 1, gain=0.25, offset=0.25, generator=1)
    assert abs(half.numpy().mean() - 0.5) < 0.08
    pullback.manual_seed(3)
    first = spanda.encode.rate(data, 10)
    pullback.manual_seed(3)
    np.testing.assert_array_equal(first.numpy(), spanda.encode.rate(data, 10).numpy())


@pytest.mark.parametrize("options", [
    {}, {"linear": True}, {"normalize": True}, {"linear": True, "normalize": True},
    {"clip": True, "normalize": True}, {"tau": 2.0, "threshold": 0.2, "first_spike_time": 2},
], ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_latency_matches_snntorch(options: dict) -> None:
    torch = pytest.importorskip("torch")
    spikegen = pytest.importorskip("snntorch.spikegen")
    data = np.random.default_rng(0).random((6, 5))
    data[0, :2] = [0.0, 0.005]  # below the threshold
    steps = 40
    theirs = spikegen.latency(torch.tensor(data, dtype=torch.float32), num_steps=steps, **options)
    ours = spanda.encode.latency(pullback.tensor(data, dtype=pullback.float32), steps, **options)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_latency_errors() -> None:
    with pytest.raises(ValueError, match=r"data must lie in \[0, 1\], got \[0, 2\]"):
        spanda.encode.latency(pullback.tensor([0.0, 2.0]), 5)
    with pytest.raises(ValueError, match="past num_steps - 1 = 2; lower tau or pass normalize"):
        spanda.encode.latency(pullback.tensor([0.02, 1.0]), 3, tau=5.0)
    with pytest.raises(ValueError, match="encode.rate: num_steps must be a positive int"):
        spanda.encode.rate(pullback.rand(2), 2.5)


def _spikes(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.random((12, 50, 6)) < 0.2).astype(np.float32)


def test_rate_decoder_predicts_as_snntorch_accuracy_rate() -> None:
    torch = pytest.importorskip("torch")
    acc = pytest.importorskip("snntorch.functional.acc")
    spikes = _spikes()
    counts = spikes.sum(axis=0)
    keep = np.sort(counts, axis=1)[:, -1] > np.sort(counts, axis=1)[:, -2]  # no ties at the top
    spikes = spikes[:, keep]
    targets = np.random.default_rng(1).integers(0, 6, spikes.shape[1])
    decoder = spanda.RateDecoder()
    rates = decoder(pullback.tensor(spikes))
    np.testing.assert_allclose(rates.numpy(), spikes.mean(axis=0))
    predicted = decoder.predict(pullback.tensor(spikes)).numpy()
    assert np.mean(predicted == targets) == acc.accuracy_rate(torch.tensor(spikes),
                                                              torch.tensor(targets))


def test_rate_decoder_breaks_ties_with_the_membrane() -> None:
    spikes = np.zeros((4, 2, 3), dtype=np.float32)
    spikes[:, 0, 1] = spikes[:, 0, 2] = 1.0  # sample 0: classes 1 and 2 fire at every step
    spikes[:2, 1, 0] = 1.0                   # sample 1: class 0 fires most
    membrane = np.zeros((4, 2, 3), dtype=np.float32)
    membrane[:, 0, 2] = 2.0
    membrane[:, 1, 2] = 9.0                  # not tied at the top: does not count
    decoder = spanda.RateDecoder()
    assert decoder.predict(pullback.tensor(spikes)).tolist() == [1, 0]
    assert decoder.predict(pullback.tensor(spikes), pullback.tensor(membrane)).tolist() == [2, 0]
    with pytest.raises(ShapeError, match="membrane of shape"):
        decoder.predict(pullback.tensor(spikes), pullback.tensor(membrane[:2]))


def test_first_spike_decoder_times_and_predictions() -> None:
    torch = pytest.importorskip("torch")
    acc = pytest.importorskip("snntorch.functional.acc")
    spikes = _spikes(2)
    spikes[:, 0, :] = 0.0  # sample 0 never fires: time T for every class
    times = spanda.decode.first_spike_time(pullback.tensor(spikes)).numpy()
    fired = spikes.any(axis=0)
    np.testing.assert_array_equal(times, np.where(fired, spikes.argmax(axis=0), 12))
    # snnTorch agrees where its convention (no spike -> T - 1) makes no tie at the first time.
    ok = [b for b in range(1, 50) if np.sum(times[b] == times[b].min()) == 1 and times[b].min() < 11]
    targets = np.random.default_rng(3).integers(0, 6, len(ok))
    predicted = spanda.FirstSpikeDecoder().predict(pullback.tensor(spikes[:, ok])).numpy()
    np.testing.assert_array_equal(predicted, times[ok].argmin(axis=1))
    assert np.mean(predicted == targets) == acc.accuracy_temporal(torch.tensor(spikes[:, ok]),
                                                                  torch.tensor(targets))
    with pytest.raises(ShapeError, match=r"first_spike_time: expected spikes \(T, B, classes\)"):
        spanda.decode.first_spike_time(pullback.rand(3, 4))
