"""Property tests: random shapes, axes and index keys drawn by hypothesis, compared with PyTorch
(values, dtypes, gradients) through the op database's records:

* binary ops broadcast any two mutually broadcastable shapes (numbers on either side too);
* reductions over random axes (None, one, several, negative) with and without keepdims;
* indexing with random basic keys (ints, positive-step slices, None, Ellipsis), integer arrays
  (repeated and negative entries, broadcast against each other, mixed with slices) and masks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pullback.testing.opdb import Arg, Sample, get_record
from pullback.testing.opdb._inputs import nonzero, positive, values
from pullback.testing.oracle import compare_with_torch

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")

PROPERTY = settings(max_examples=40, deadline=None)
FLOATS = st.sampled_from(["float32", "float64"])
SEEDS = st.integers(0, 2**32 - 1)


def _check(record_name: str, dtype: str, sample: Sample) -> None:
    with np.errstate(all="ignore"):
        outcome = compare_with_torch(torch, get_record(record_name), dtype, sample)
    outcome.check(f"{record_name}-{dtype}-{sample.id}")


# -- broadcasting ------------------------------------------------------------------------------

BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "Tensor.__mul__",
          "Tensor.__truediv__", "where", "lt", "remainder"]


@PROPERTY
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                min_side=0, max_side=3),
       name=st.sampled_from(BINARY), dtype=FLOATS, seed=SEEDS,
       number=st.sampled_from([None, "left", "right"]))
def test_binary_ops_broadcast_like_pytorch(shapes: Any, name: str, dtype: str, seed: int,
                                           number: str | None) -> None:
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    a, b = shapes.input_shapes
    x = Arg((positive if name == "pow" else nonzero)(a, dt, rng))
    y = Arg(nonzero(b, dt, rng))
    args: tuple[Any, ...] = (x, y)
    if number == "left":
        args = (float(nonzero((), dt, rng) if name != "pow" else positive((), dt, rng)), y)
    elif number == "right":
        args = (x, float(nonzero((), dt, rng)))
    if name == "where":
        args = (Arg(values(shapes.result_shape, np.dtype(bool), rng)), *args)
    _check(name, dtype, Sample(args))


# -- reductions ------------------------------------------------------------------------------

# name -> (takes several axes, min side: 0 where the reduction has an identity, 2 where it
# needs degrees of freedom)
REDUCTIONS = {"sum": (True, 0), "prod": (True, 0), "mean": (True, 1), "amax": (True, 1),
              "amin": (True, 1), "logsumexp": (True, 1), "norm": (True, 1), "var": (True, 2),
              "std": (True, 2), "all": (True, 0), "any": (True, 0), "max": (False, 1),
              "argmin": (False, 1), "cumsum": (False, 0)}


@st.composite
def reductions(draw: Any) -> tuple[str, Sample, str]:
    name = draw(st.sampled_from(sorted(REDUCTIONS)))
    several, min_side = REDUCTIONS[name]
    shape = draw(hnp.array_shapes(min_dims=0 if several and min_side < 2 else 1, max_dims=4,
                                  min_side=min_side, max_side=3))
    ndim = len(shape)
    if several:
        axes = draw(st.one_of(st.none(), st.lists(st.integers(0, ndim - 1), unique=True,
                                                  min_size=1, max_size=ndim) if ndim else st.none()))
        if axes is not None:  # any mix of negative spellings, as an int when there is one
            axes = tuple(a - ndim if draw(st.booleans()) else a for a in axes)
            axes = axes[0] if len(axes) == 1 and draw(st.booleans()) else axes
    else:
        axes = draw(st.integers(-ndim, ndim - 1))
    kwargs: dict[str, Any] = {"axis": axes}
    if name != "cumsum":
        kwargs["keepdims"] = draw(st.booleans())
    dtype = "bool" if name in ("all", "any") else draw(FLOATS)
    rng = np.random.default_rng(draw(SEEDS))
    make = values if dtype == "bool" else nonzero
    return name, Sample((Arg(make(shape, np.dtype(dtype), rng)),), kwargs), dtype


@PROPERTY
@given(case=reductions())
def test_reductions_over_random_axes_match_pytorch(case: tuple[str, Sample, str]) -> None:
    name, sample, dtype = case
    _check(name, dtype, sample)


# -- indexing --------------------------------------------------------------------------------

@st.composite
def basic_keys(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """Ints, slices with positive steps (PyTorch has no others), None and one Ellipsis."""
    key: list[Any] = []
    dims = list(shape[:draw(st.integers(0, len(shape)))])
    for n in dims:
        if n and draw(st.booleans()):
            key.append(draw(st.integers(-n, n - 1)))
        else:
            start = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            stop = draw(st.one_of(st.none(), st.integers(-n - 1, n + 1)))
            key.append(slice(start, stop, draw(st.one_of(st.none(), st.integers(1, 3)))))
        if draw(st.integers(0, 4)) == 0:
            key.append(None)
    if len(dims) < len(shape) and draw(st.booleans()):
        key.append(Ellipsis)
    return tuple(key)


@st.composite
def advanced_keys(draw: Any, shape: tuple[int, ...], rng: np.random.Generator) -> tuple[Any, ...]:
    """Integer arrays (repeats, negatives, broadcast together), optionally after a slice, or a
    boolean mask over the leading dims."""
    if draw(st.booleans()):
        k = draw(st.integers(1, len(shape)))
        return (Arg(values(shape[:k], np.dtype(bool), rng)),)
    lead = [slice(None)] if len(shape) > 1 and draw(st.booleans()) else []
    room = len(shape) - len(lead)
    count = draw(st.integers(1, room))
    index_shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=count, max_dims=2,
                                                          min_side=0, max_side=3)).input_shapes
    arrays = [Arg(rng.integers(-shape[d], shape[d], size=s).astype(np.int64))
              for d, s in zip(range(len(lead), len(lead) + count), index_shapes)]
    return tuple(lead + arrays)


@PROPERTY
@given(data=st.data(), dtype=FLOATS, seed=SEEDS,
       shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
def test_basic_indexing_matches_pytorch(data: Any, dtype: str, seed: int,
                                        shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(seed)
    key = data.draw(basic_keys(shape))
    _check("getitem", dtype, Sample((Arg(nonzero(shape, np.dtype(dtype), rng)), key)))


@PROPERTY
@given(data=st.data(), dtype=FLOATS, seed=SEEDS,
       shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
def test_array_and_mask_indexing_scatter_add_gradients_like_pytorch(
        data: Any, dtype: str, seed: int, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(seed)
    key = data.draw(advanced_keys(shape, rng))
    _check("getitem[advanced]", dtype, Sample((Arg(nonzero(shape, np.dtype(dtype), rng)), key)))
