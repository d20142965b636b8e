"""Shared helpers of pullback.func's tests: op-database samples as batches, loop references."""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

import pullback as pb
from pullback.func._pytree import tree_flatten
from pullback.testing.opdb import OP_DB, Arg, OpRecord, Sample

BATCH = 3


def primary_dtype(record: OpRecord) -> str:
    """The dtype a record's generated transform tests run in (float64 where it has it)."""
    for dtype in ("float64", "int64", "bool"):
        if dtype in record.dtypes:
            return dtype
    return record.dtypes[0]


def opdb_cases(differentiable_only: bool = False) -> list[tuple[OpRecord, Sample]]:
    """(record, sample) for every record of the op database, in its primary dtype."""
    out = []
    for record in OP_DB:
        if not record.dtypes:  # creation functions (arange, tensor, load...): nothing to batch
            continue
        if differentiable_only and not record.differentiable:
            continue
        for sample in record.sample_list(primary_dtype(record)):
            out.append((record, sample))
    return out


def case_id(case: tuple[OpRecord, Sample]) -> str:
    record, sample = case
    return f"{record.name}-{primary_dtype(record)}-{sample.id}"


def tensor_args(sample: Sample) -> list[Arg]:
    """The sample's tensor arguments in call order (positional, in sequences, keywords)."""
    found: list[Arg] = []

    def walk(obj: Any) -> None:
        if isinstance(obj, Arg):
            found.append(obj)
        elif isinstance(obj, (tuple, list)):
            for o in obj:
                walk(o)

    walk(tuple(sample.args))
    walk(tuple(sample.kwargs.values()))
    return found


def caller(record: OpRecord, sample: Sample) -> Callable[..., Any]:
    """``f(*tensors)``: the record's function on the sample with its tensors replaced."""

    def call(*tensors: Any) -> Any:
        it: Iterator[Any] = iter(tensors)

        def fill(obj: Any) -> Any:
            if isinstance(obj, Arg):
                return next(it)
            if isinstance(obj, (tuple, list)):
                return type(obj)(fill(o) for o in obj)
            return obj

        args = fill(tuple(sample.args))
        kwargs = {k: fill(v) for k, v in sample.kwargs.items()}
        return record.fn(*args, **kwargs)

    return call


def sample_values(arg: Arg, count: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``count`` values for one argument: its own, then shuffles of it (same value domain, so
    that logs see positives and indices stay in range)."""
    out = [arg.value]
    for _ in range(count - 1):
        flat = arg.value.reshape(-1).copy()
        rng.shuffle(flat)
        out.append(flat.reshape(arg.value.shape))
    return out


def leaves(out: Any) -> list[Any]:
    return [x for x in tree_flatten(out)[0] if isinstance(x, pb.Tensor)]


def assert_same(got: pb.Tensor, want: np.ndarray, what: str, rtol: float = 1e-10,
                atol: float = 1e-12) -> None:
    g = got.numpy() if not got.requires_grad else got.detach().numpy()
    assert g.shape == want.shape, f"{what}: shape {g.shape}, expected {want.shape}"
    assert g.dtype == want.dtype, f"{what}: dtype {g.dtype}, expected {want.dtype}"
    if g.dtype.kind in "fc":
        np.testing.assert_allclose(g, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, want, err_msg=what)
