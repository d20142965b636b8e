"""Every op of the op database, vmapped with batch dims 0, -1 and None per input, matches a
loop over the samples stacked (and so does vmap of vmap): generated from the records, as
functorch's and JAX's batching tests are."""

from __future__ import annotations

import numpy as np
import pytest
from func_helpers import (
    BATCH, assert_same, caller, case_id, leaves, opdb_cases, sample_values, tensor_args,
)

import pullback as pb
from pullback.func import VmapError, vmap

CASES = opdb_cases()


def _configs(count: int) -> list[tuple]:
    """Batch dims per tensor argument: all first, all last, and each one unbatched in turn."""
    configs = [(0,) * count, (-1,) * count]
    if count > 1:
        configs += [tuple(None if j == i else 0 for j in range(count)) for i in range(count)]
    return configs


# Records whose result is a Python value computed from the data (allclose is bool(all(...))):
# each sample may give another, so vmap refuses them as data-dependent control flow (as
# torch.func does).
HOST_VALUED = {"allclose"}


def _refusal(record, args, dims) -> str | None:
    """The pattern of the error vmap must raise for these in_dims, or None. Batched boolean
    masks as index keys: each sample may select a different number of elements, so vmap
    refuses them (as functorch does) even where the counts happen to agree."""
    if record.name in ("getitem[advanced]", "masked_select") and any(
            d is not None and a.value.dtype == bool for a, d in zip(args, dims)):
        return "boolean mask"
    if record.name == "repeat_interleave" and any(
            d is not None and a.value.dtype.kind == "i" for a, d in zip(args, dims)):
        return "on a batched tensor inside vmap"  # the counts decide the result's size
    if record.name in HOST_VALUED and any(d is not None for d in dims):
        return r"bool\(\) on a batched tensor"
    return None


def _loop(fn, per_sample, dims, size):
    """The reference: ``fn`` on each sample, outputs stacked along a new first axis."""
    results = []
    for b in range(size):
        args = [pb.tensor(v[b] if d is not None else v[0]) for v, d in zip(per_sample, dims)]
        results.append([t.numpy() for t in leaves(fn(*args))])
    shapes = {tuple(r.shape for r in res) for res in results}
    if len(shapes) != 1:
        return None  # the output's shape depends on the values: not batchable
    return [np.stack([res[k] for res in results]) for k in range(len(results[0]))]


def _physical(values, dim):
    stacked = np.stack(values, axis=0)
    return pb.tensor(np.moveaxis(stacked, 0, dim if dim is not None else 0))


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_vmap_matches_loop(case) -> None:
    record, sample = case
    args = tensor_args(sample)
    if not args:
        pytest.skip("no tensor argument to batch")
    fn = caller(record, sample)
    rng = np.random.default_rng(0)
    per_sample = [sample_values(a, BATCH, rng) for a in args]
    for dims in _configs(len(args)):
        want = _loop(fn, per_sample, dims, BATCH)
        inputs = [_physical(v, d) if d is not None else pb.tensor(v[0])
                  for v, d in zip(per_sample, dims)]
        refusal = _refusal(record, args, dims)
        if refusal:
            with pytest.raises(VmapError, match=refusal):
                vmap(fn, in_dims=dims)(*inputs)
            continue
        if want is None:
            with pytest.raises((VmapError, pb.errors.PullbackError)):
                vmap(fn, in_dims=dims)(*inputs)
            continue
        got = leaves(vmap(fn, in_dims=dims)(*inputs))
        assert len(got) == len(want)
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{record.name} in_dims={dims} output {k}")


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_vmap_of_vmap_matches_loop(case) -> None:
    record, sample = case
    args = tensor_args(sample)
    if not args:
        pytest.skip("no tensor argument to batch")
    fn = caller(record, sample)
    rng = np.random.default_rng(1)
    outer, inner = 2, BATCH
    per_sample = [[sample_values(a, inner, rng) for _ in range(outer)] for a in args]
    # The last argument is shared by the outer batch (None there), batched at -1 inside.
    outer_dims = tuple(0 if i < len(args) - 1 or len(args) == 1 else None
                       for i in range(len(args)))
    inner_dims = tuple(-1 if i == len(args) - 1 else 0 for i in range(len(args)))
    results = []
    for o in range(outer):
        row = []
        for b in range(inner):
            sample_args = [pb.tensor(v[o if od is not None else 0][b])
                           for v, od in zip(per_sample, outer_dims)]
            row.append([t.numpy() for t in leaves(fn(*sample_args))])
        results.append(row)
    shapes = {tuple(r.shape for r in res) for row in results for res in row}
    inputs = []
    for v, od, idim in zip(per_sample, outer_dims, inner_dims):
        per_outer = [np.moveaxis(np.stack(v[o], 0), 0, idim) for o in range(outer)]
        inputs.append(pb.tensor(np.stack(per_outer, 0) if od is not None else per_outer[0]))
    batched = vmap(vmap(fn, in_dims=inner_dims), in_dims=outer_dims)
    refusal = _refusal(record, args, inner_dims)
    if refusal:
        with pytest.raises(VmapError, match=refusal):
            batched(*inputs)
        return
    if len(shapes) != 1:
        with pytest.raises((VmapError, pb.errors.PullbackError)):
            batched(*inputs)
        return
    got = leaves(batched(*inputs))
    for k, g in enumerate(got):
        want = np.stack([np.stack([res[k] for res in row]) for row in results])
        assert_same(g, want, f"{record.name} nested output {k}")
