"""Random sampling by PyTorch's names (pullback._ops.sampling): the numbers come from another
generator than PyTorch's, so each function is checked against PyTorch for shapes and dtypes and
against its distribution's closed-form moments and frequencies (bounds of about 5 standard
errors: the checks fail on a wrong distribution, not on chance), plus seeding and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.errors import ArgumentError, AutogradError

N = 200_000


@pytest.fixture(autouse=True)
def _seeded() -> None:
    pb.manual_seed(1234)


def test_like_functions_match_torch_shapes_and_dtypes() -> None:
    torch = pytest.importorskip("torch")
    for dtype in ("float32", "float64"):
        x = pb.zeros(2, 3, dtype=dtype)
        tx = torch.zeros(2, 3, dtype=getattr(torch, dtype))
        for name, args in (("rand_like", ()), ("randn_like", ()), ("randint_like", (7,))):
            ours, theirs = getattr(pb, name)(x, *args), getattr(torch, name)(tx, *args)
            assert tuple(ours.shape) == tuple(theirs.shape)
            assert str(ours.dtype) == str(theirs.dtype).removeprefix("torch.")
    ints = pb.randint_like(pb.zeros(4, 5, dtype="int64"), 3, 6)
    assert str(ints.dtype) == "int64" and 3 <= int(ints.min()) and int(ints.max()) < 6


def test_moments_of_the_like_functions() -> None:
    x = pb.zeros(N, dtype="float64")
    u, z = pb.rand_like(x).numpy(), pb.randn_like(x).numpy()
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / N) and 0 <= u.min() and u.max() < 1
    assert abs(z.mean()) < 5 / np.sqrt(N) and abs(z.var() - 1) < 5 * np.sqrt(2 / N)


def test_bernoulli_frequencies_and_dtype() -> None:
    p = pb.tensor(np.linspace(0.05, 0.95, 10), dtype="float64")
    draws = pb.bernoulli(p.expand(20_000, 10)).numpy()
    assert set(np.unique(draws)) <= {0.0, 1.0}
    se = np.sqrt(p.numpy() * (1 - p.numpy()) / draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - p.numpy()) < 5 * se)
    assert str(pb.bernoulli(pb.full((3,), 0.5, dtype="float32")).dtype) == "float32"
    assert abs(pb.bernoulli(pb.zeros(N), p=0.25).numpy().mean() - 0.25) < 5 * np.sqrt(
        0.1875 / N)
    with pytest.raises(ArgumentError, match=r"bernoulli: probabilities must be in \[0, 1\]"):
        pb.bernoulli(pb.tensor([0.5, 1.5]))


def test_poisson_mean_and_variance() -> None:
    for rate in (0.5, 4.0, 30.0):
        s = pb.poisson(pb.full((N,), rate, dtype="float64")).numpy()
        assert abs(s.mean() - rate) < 5 * np.sqrt(rate / N)
        assert abs(s.var() - rate) < 5 * rate * np.sqrt(2 / N) + 5 * np.sqrt(rate / N)
        assert np.all(s == np.round(s)) and s.min() >= 0


def test_multinomial_with_replacement_frequencies() -> None:
    w = np.array([1.0, 2.0, 3.0, 0.0])
    draws = pb.multinomial(pb.tensor(w), N, replacement=True).numpy()
    freq = np.bincount(draws, minlength=4) / N
    p = w / w.sum()
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / N) + 1e-12)
    assert freq[3] == 0  # a zero weight is never drawn


def test_multinomial_without_replacement_draws_distinct_indices_by_weight() -> None:
    torch = pytest.importorskip("torch")
    w = np.array([[4.0, 1.0, 1.0, 2.0], [1.0, 1.0, 1.0, 1.0]])
    ours = pb.multinomial(pb.tensor(w), 3)
    theirs = torch.multinomial(torch.tensor(w), 3)
    assert tuple(ours.shape) == tuple(theirs.shape) and str(ours.dtype) == "int64"
    d = pb.multinomial(pb.tensor(np.tile(w[0], (20_000, 1))), 4).numpy()
    assert np.all(np.sort(d, axis=1) == np.arange(4))
    firsts = d[:, 0]
    # The first draw of a draw without replacement follows the weights.
    freq = np.bincount(firsts, minlength=4) / len(firsts)
    p = w[0] / w[0].sum()
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / len(firsts)))
    with pytest.raises(ArgumentError, match="multinomial: cannot draw 4 samples"):
        pb.multinomial(pb.tensor([1.0, 0.0, 2.0, 1.0]), 4)


def test_in_place_fills() -> None:
    t = pb.zeros(N, dtype="float64")
    assert t.bernoulli_(0.3) is t
    assert set(np.unique(t.numpy())) <= {0.0, 1.0}
    assert abs(t.numpy().mean() - 0.3) < 5 * np.sqrt(0.21 / N)
    t.exponential_(2.0)
    assert abs(t.numpy().mean() - 0.5) < 5 * 0.5 / np.sqrt(N) and t.numpy().min() >= 0
    leaf = pb.zeros(3, requires_grad=True)
    with pytest.raises(AutogradError, match="exponential_: a leaf tensor that requires grad"):
        leaf.exponential_()


def test_seeding_reproduces_every_draw() -> None:
    def draws() -> list[np.ndarray]:
        pb.manual_seed(7)
        x = pb.zeros(5, dtype="float64")
        return [pb.rand_like(x).numpy(), pb.bernoulli(pb.full((5,), 0.5)).numpy(),
                pb.poisson(pb.full((5,), 2.0)).numpy(),
                pb.multinomial(pb.ones(6), 3).numpy(), x.exponential_().numpy().copy()]

    for a, b in zip(draws(), draws()):
        np.testing.assert_array_equal(a, b)
