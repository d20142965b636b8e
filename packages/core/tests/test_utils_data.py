"""pullback.utils.data against torch.utils.data: datasets, samplers, collation, the DataLoader's
batches and arguments, and its worker processes (order, sharding, seeds, errors, persistence,
dead workers)."""

from __future__ import annotations

import collections
import os
import signal
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback.utils import data as ours

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of torch.utils.data")
theirs = torch.utils.data


def as_lists(batch: Any) -> Any:
    """A batch as nested Python lists, for either library."""
    if isinstance(batch, (pb.Tensor, torch.Tensor)):
        return np.asarray(batch).tolist()
    if isinstance(batch, dict):
        return {k: as_lists(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [as_lists(v) for v in batch]
    return batch


class Squares:
    """A map-style dataset of (index, index squared, name) items, for both libraries."""

    def __init__(self, lib: Any, n: int = 11) -> None:
        self.lib, self.n = lib, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return {"x": self.lib.tensor([float(i), float(i * i)]), "i": i, "name": f"s{i}"}


def test_public_names_match_torch() -> None:
    for name in ours.__all__:
        if name not in ("default_convert", "WorkerInfo"):  # torch keeps these in submodules
            assert hasattr(theirs, name) or hasattr(theirs.dataloader, name), name


# -- collation ------------------------------------------------------------------------------------

@pytest.mark.parametrize("items", [
    [1, 2, 3], [1.5, 2.5], [True, False], ["a", "b"], [(1, 2.0), (3, 4.0)],
    [{"a": 1, "b": [1.0, 2.0]}, {"a": 2, "b": [3.0, 4.0]}], [np.ones(3), np.zeros(3)],
], ids=repr)
def test_default_collate_matches_torch(items: list[Any]) -> None:
    mine, reference = ours.default_collate(items), theirs.default_collate(items)
    assert as_lists(mine) == as_lists(reference)
    if isinstance(reference, torch.Tensor):
        assert str(mine.dtype) == str(reference.dtype).removeprefix("torch.")


def test_default_collate_stacks_tensors_and_namedtuples() -> None:
    Point = collections.namedtuple("Point", "x y")
    mine = ours.default_collate([Point(pb.ones(2), 1), Point(pb.zeros(2), 2)])
    reference = theirs.default_collate([Point(torch.ones(2), 1), Point(torch.zeros(2), 2)])
    assert type(mine) is Point and as_lists(mine) == as_lists(reference)


# -- datasets -------------------------------------------------------------------------------------

def test_subset_concat_and_tensor_dataset_index_as_torch() -> None:
    values = np.arange(12.0).reshape(6, 2)
    for lib, mod in ((pb, ours), (torch, theirs)):
        base = mod.TensorDataset(lib.tensor(values), lib.arange(6))
        both = mod.ConcatDataset([base, mod.Subset(base, [5, 0, 3])])
        assert len(both) == 9
        got = [as_lists(both[i]) for i in (0, 5, 6, 7, 8, -1, -9)]
        if lib is pb:
            mine = got
        else:
            assert mine == got
    with pytest.raises(ValueError):
        ours.ConcatDataset([])


@pytest.mark.parametrize("lengths", [[3, 7], [0.5, 0.5], [0.3, 0.3, 0.4], [0.33, 0.33, 0.34]])
def test_random_split_sizes_match_torch(lengths: list[Any]) -> None:
    mine = ours.random_split(range(10), lengths, generator=pb.Generator().manual_seed(1))
    reference = theirs.random_split(range(10), lengths,
                                    generator=torch.Generator().manual_seed(1))
    assert [len(s) for s in mine] == [len(s) for s in reference]
    assert sorted(i for s in mine for i in s.indices) == list(range(10))
    again = ours.random_split(range(10), lengths, generator=pb.Generator().manual_seed(1))
    assert [s.indices for s in again] == [s.indices for s in mine]
    with pytest.raises(ValueError):
        ours.random_split(range(10), [3, 3])


# -- samplers -------------------------------------------------------------------------------------

def test_samplers_visit_what_torch_visits() -> None:
    data = list(range(7))
    assert list(ours.SequentialSampler(data)) == list(theirs.SequentialSampler(data))
    assert sorted(ours.RandomSampler(data)) == sorted(theirs.RandomSampler(data))
    assert len(list(ours.RandomSampler(data, num_samples=17))) == 17
    drawn = list(ours.RandomSampler(data, replacement=True, num_samples=50))
    assert len(drawn) == 50 and set(drawn) <= set(data)
    assert sorted(ours.SubsetRandomSampler([4, 2, 6])) == [2, 4, 6]
    weighted = list(ours.WeightedRandomSampler([0, 1, 0, 3], 40))
    assert set(weighted) <= {1, 3} and len(weighted) == 40
    for size, drop in ((3, False), (3, True), (7, False), (8, True)):
        mine = ours.BatchSampler(ours.SequentialSampler(data), size, drop)
        reference = theirs.BatchSampler(theirs.SequentialSampler(data), size, drop)
        assert list(mine) == list(reference) and len(mine) == len(reference)


def test_a_seeded_generator_repeats_the_shuffle() -> None:
    def order(seed: int) -> list[int]:
        loader = ours.DataLoader(list(range(20)), batch_size=5, shuffle=True,
                                 generator=pb.Generator().manual_seed(seed))
        return [i for batch in loader for i in batch.tolist()]

    assert order(3) == order(3) != order(4)
    assert sorted(order(3)) == list(range(20))


# -- the loader in one process --------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"batch_size": 4}, {"batch_size": 4, "drop_last": True}, {"batch_size": 1},
    {"batch_size": None}, {"batch_size": 3, "collate_fn": lambda items: [it["i"] for it in items]},
    {"batch_sampler": [[3, 1], [0], [10, 2, 4]]}, {"sampler": [5, 4, 3, 2], "batch_size": 3},
    {"batch_size": 4, "pin_memory": True},
], ids=lambda k: ",".join(sorted(k)))
def test_batches_match_torch(kwargs: dict[str, Any]) -> None:
    mine = ours.DataLoader(Squares(pb), **kwargs)
    reference = theirs.DataLoader(Squares(torch), **kwargs)
    assert [as_lists(b) for b in mine] == [as_lists(b) for b in reference]
    assert len(mine) == len(reference)


@pytest.mark.parametrize("kwargs", [
    {"shuffle": True, "sampler": [0]}, {"batch_sampler": [[0]], "batch_size": 2},
    {"num_workers": -1}, {"prefetch_factor": 2}, {"persistent_workers": True},
    {"timeout": -1}, {"multiprocessing_context": "spawn", "num_workers": 1},
], ids=lambda k: ",".join(sorted(k)))
def test_contradictory_arguments_are_refused_as_torch(kwargs: dict[str, Any]) -> None:
    if kwargs.get("multiprocessing_context") != "spawn":
        with pytest.raises(ValueError):
            theirs.DataLoader(Squares(torch), **kwargs)
    with pytest.raises(ValueError):
        ours.DataLoader(Squares(pb), **kwargs)


class Stream:
    """An iterable dataset of 0..n-1, sharded over workers as PyTorch's documentation shows."""

    def __init__(self, module: Any, n: int = 11) -> None:
        self.module, self.n = module, n

    def __iter__(self) -> Any:
        info = self.module.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def make_stream(module: Any) -> Any:
    return type("S", (Stream, module.IterableDataset), {})(module)


@pytest.mark.parametrize("workers", [0, 2, 3])
@pytest.mark.parametrize("kwargs", [{"batch_size": 2}, {"batch_size": 3, "drop_last": True},
                                    {"batch_size": None}])
def test_iterable_datasets_match_torch(workers: int, kwargs: dict[str, Any]) -> None:
    mine = ours.DataLoader(make_stream(ours), num_workers=workers, **kwargs)
    reference = theirs.DataLoader(make_stream(theirs), num_workers=workers, **kwargs)
    assert [as_lists(b) for b in mine] == [as_lists(b) for b in reference]
    with pytest.raises(ValueError):
        ours.DataLoader(make_stream(ours), shuffle=True)


# -- worker processes -----------------------------------------------------------------------------

class Probe(ours.Dataset):
    """Items that say which process made them, with what seed and which random draws."""

    def __len__(self) -> int:
        return 12

    def __getitem__(self, i: int) -> Any:
        info = ours.get_worker_info()
        return {"i": i, "pid": os.getpid(), "worker": -1 if info is None else info.id,
                "seed": -1 if info is None else info.seed % 1000003,
                "draw": float(pb.rand(()).item()), "np": float(np.random.rand())}


def test_workers_give_the_single_process_batches_in_order() -> None:
    data = ours.TensorDataset(pb.randn(50, 3), pb.arange(50))
    for shuffle in (False, True):
        runs = [[as_lists(b) for b in ours.DataLoader(
            data, batch_size=7, shuffle=shuffle, num_workers=workers,
            generator=pb.Generator().manual_seed(0))] for workers in (0, 1, 3)]
        assert runs[0] == runs[1] == runs[2]


def test_workers_are_processes_with_their_own_seeds() -> None:
    calls = []
    loader = ours.DataLoader(Probe(), batch_size=2, num_workers=3,
                             worker_init_fn=lambda wid: calls.append(wid))
    batches = list(loader)
    pids = {p for b in batches for p in b["pid"].tolist()}
    assert len(pids) == 3 and os.getpid() not in pids
    assert {w for b in batches for w in b["worker"].tolist()} == {0, 1, 2}
    seeds = {}
    for b in batches:
        for w, s in zip(b["worker"].tolist(), b["seed"].tolist()):
            seeds.setdefault(w, set()).add(s)
    assert all(len(s) == 1 for s in seeds.values()) and len(set().union(*seeds.values())) == 3
    draws = [d for b in batches for d in b["draw"].tolist()]
    assert len(set(draws)) == len(draws)  # the workers' generators are seeded apart
    assert calls == []  # worker_init_fn ran in the workers, not here
    assert ours.get_worker_info() is None


def test_worker_init_fn_runs_in_each_worker() -> None:
    def init(worker_id: int) -> None:
        np.random.seed(1000 + worker_id)

    loader = ours.DataLoader(Probe(), batch_size=3, num_workers=2, worker_init_fn=init)
    first = {}
    for b in loader:
        for w, value in zip(b["worker"].tolist(), b["np"].tolist()):
            first.setdefault(w, value)
    assert first == {w: np.random.RandomState(1000 + w).rand() for w in (0, 1)}


def test_persistent_workers_survive_epochs_and_an_early_break() -> None:
    loader = ours.DataLoader(Probe(), batch_size=2, num_workers=2, persistent_workers=True)
    first = {p for b in loader for p in b["pid"].tolist()}
    for _ in loader:
        break  # leave an epoch with batches in flight
    again = [b for b in loader]
    assert [i for b in again for i in b["i"].tolist()] == list(range(12))
    assert {p for b in again for p in b["pid"].tolist()} == first
    plain = ours.DataLoader(Probe(), batch_size=2, num_workers=2)
    assert {p for b in plain for p in b["pid"].tolist()}.isdisjoint(
        {p for b in plain for p in b["pid"].tolist()})


class Failing(ours.Dataset):
    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> int:
        if i == 4:
            raise KeyError(f"no item {i}")
        if i == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_a_worker_error_is_raised_with_its_type_and_traceback() -> None:
    loader = ours.DataLoader(Failing(), batch_size=2, num_workers=2)
    got = []
    with pytest.raises(KeyError, match=r"(?s)Caught KeyError in DataLoader worker.*no item 4"):
        for b in loader:
            got.append(b.tolist())
    assert got == [[0, 1], [2, 3]]


def test_a_dead_worker_is_reported() -> None:
    loader = ours.DataLoader(ours.Subset(Failing(), [5, 0]), batch_size=1, num_workers=1)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)


def test_a_batch_that_cannot_cross_processes_says_why() -> None:
    loader = ours.DataLoader([object(), object()], batch_size=None, num_workers=1)
    with pytest.raises(RuntimeError, match="cannot store a object"):
        list(loader)
