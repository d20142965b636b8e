"""The samplers against PyTorch's: they draw lazily (nothing before the first index; indices
with replacement a chunk at a time, so ``num_samples=10**10`` costs no memory), give a new
order each epoch, follow a seeded generator, take the same arguments and refuse the same ones
with the same exception classes, and batch as PyTorch's BatchSampler does."""

from __future__ import annotations

import itertools
import tracemalloc
from collections import Counter
from typing import Any, Callable

import numpy as np
import pytest

import pullback as pb
from pullback.utils import data as pdata

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")
tdata = torch.utils.data

LIBRARIES = {"torch": (torch, tdata), "pullback": (pb, pdata)}
DATA = list(range(10))
HUGE = 10**10


def _rng_state(lib: Any) -> Any:
    state = lib.get_rng_state()
    return state.tolist() if lib is torch else state


# sampler name -> how to make it from a data module (lazy ones only)
LAZY: dict[str, Callable[[Any], Any]] = {
    "random": lambda d: d.RandomSampler(DATA),
    "random_replacement": lambda d: d.RandomSampler(DATA, replacement=True, num_samples=HUGE),
    "random_more_than_n": lambda d: d.RandomSampler(DATA, num_samples=25),
    "subset_random": lambda d: d.SubsetRandomSampler([3, 5, 7]),
    "weighted": lambda d: d.WeightedRandomSampler([1.0, 2.0, 0.0, 4.0], num_samples=8),
}


@pytest.mark.parametrize("name", sorted(LAZY))
def test_nothing_is_drawn_before_the_first_index(name):
    for lib, data in LIBRARIES.values():
        sampler = LAZY[name](data)
        before = _rng_state(lib)
        iterator = iter(sampler)
        assert _rng_state(lib) == before, lib.__name__
        next(iterator)
        assert _rng_state(lib) != before, lib.__name__


def test_replacement_with_ten_billion_samples_draws_a_chunk_at_a_time():
    for _, data in LIBRARIES.values():
        sampler = data.RandomSampler(DATA, replacement=True, num_samples=HUGE)
        assert len(sampler) == HUGE
        tracemalloc.start()
        first = list(itertools.islice(iter(sampler), 1000))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 1 << 20 and len(first) == 1000 and set(first) <= set(DATA)


def test_a_weighted_sampler_with_replacement_is_lazy_too():
    """PyTorch's draws all ``num_samples`` at once (``torch.multinomial``); pullback's draws a
    chunk at a time, as its RandomSampler."""
    sampler = pdata.WeightedRandomSampler([1.0, 3.0], num_samples=HUGE)
    tracemalloc.start()
    first = list(itertools.islice(iter(sampler), 1000))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1 << 20 and set(first) <= {0, 1}


def test_weighted_draws_follow_the_weights_and_never_a_zero_weight():
    pb.manual_seed(0)
    sampler = pdata.WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], num_samples=40000)
    counts = Counter(sampler)
    assert set(counts) == {1, 2}
    assert abs(counts[2] / 40000 - 0.75) < 0.01
    without = pdata.WeightedRandomSampler([0.0, 1.0, 3.0, 2.0], num_samples=3, replacement=False)
    assert sorted(without) == [1, 2, 3]


@pytest.mark.parametrize("num_samples", [10, 25, 7])
def test_without_replacement_whole_permutations_then_a_part(num_samples):
    for _, data in LIBRARIES.values():
        order = list(data.RandomSampler(DATA, num_samples=num_samples))
        assert len(order) == num_samples
        for start in range(0, num_samples - num_samples % 10, 10):
            assert sorted(order[start:start + 10]) == DATA
        assert len(set(order[num_samples - num_samples % 10:])) == num_samples % 10


@pytest.mark.parametrize("name", sorted(LAZY))
def test_each_epoch_draws_anew_and_a_seeded_generator_repeats(name):
    for lib, data in LIBRARIES.values():
        sampler = LAZY[name](data)
        epochs = [list(itertools.islice(iter(sampler), 40)) for _ in range(4)]
        assert any(e != epochs[0] for e in epochs[1:]), lib.__name__
        seeded = []
        for _ in range(2):
            generator = lib.Generator().manual_seed(7)
            made = LAZY[name](data)
            made.generator = generator
            seeded.append(list(itertools.islice(iter(made), 40)))
        assert seeded[0] == seeded[1], lib.__name__


# -- arguments refused, with PyTorch's classes --------------------------------------------------

BAD: dict[str, Callable[[Any], Any]] = {
    "random_replacement_not_bool": lambda d: d.RandomSampler(DATA, replacement=1),
    "random_zero_samples": lambda d: d.RandomSampler(DATA, num_samples=0),
    "random_negative_samples": lambda d: d.RandomSampler(DATA, num_samples=-3),
    "random_float_samples": lambda d: d.RandomSampler(DATA, num_samples=2.5),
    "random_empty_data": lambda d: d.RandomSampler([]),
    "weighted_zero_samples": lambda d: d.WeightedRandomSampler([1.0], num_samples=0),
    "weighted_bool_samples": lambda d: d.WeightedRandomSampler([1.0], num_samples=True),
    "weighted_replacement_not_bool": lambda d: d.WeightedRandomSampler([1.0], 2, replacement=0),
    "weighted_2d": lambda d: d.WeightedRandomSampler([[1.0, 2.0]], num_samples=2),
    "batch_size_zero": lambda d: d.BatchSampler(DATA, batch_size=0, drop_last=False),
    "batch_size_bool": lambda d: d.BatchSampler(DATA, batch_size=True, drop_last=False),
    "batch_size_float": lambda d: d.BatchSampler(DATA, batch_size=2.0, drop_last=False),
    "drop_last_not_bool": lambda d: d.BatchSampler(DATA, batch_size=2, drop_last=1),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_arguments_are_refused_with_pytorch_s_class(name):
    raised = {}
    for lib_name, (_, data) in LIBRARIES.items():
        with pytest.raises(Exception) as info:  # noqa: PT011 - the class is compared below
            BAD[name](data)
        raised[lib_name] = type(info.value)
    assert issubclass(raised["pullback"], raised["torch"])


@pytest.mark.parametrize("size, drop_last", [(1, False), (3, False), (3, True), (4, True),
                                             (10, False), (11, True), (11, False)])
def test_batches_as_pytorch_s(size, drop_last):
    batches = {}
    for name, (_, data) in LIBRARIES.items():
        for source in (data.SequentialSampler(DATA), ["a", "b", "c", "d", "e"]):
            sampler = data.BatchSampler(source, batch_size=size, drop_last=drop_last)
            batches.setdefault(name, []).append((list(sampler), len(sampler)))
    assert batches["pullback"] == batches["torch"]


def test_samples_are_python_ints_as_pytorch_s():
    for _, data in LIBRARIES.values():
        for name in sorted(LAZY):
            assert all(type(i) is int for i in itertools.islice(iter(LAZY[name](data)), 10))
    np.testing.assert_array_equal(list(pdata.SequentialSampler(DATA)), DATA)
