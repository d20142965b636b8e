"""Indexing against PyTorch, with hypothesis-drawn index expressions on random shapes: ints
(negative too), slices with steps, None, Ellipsis, integer and bool tensors, lists and tuples.
Each expression is checked for the forward value and shape, the gradient (repeated indices
accumulate) and ``__setitem__``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pullback as pb

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


@st.composite
def shapes_and_keys(draw: Any) -> tuple[tuple[int, ...], list[tuple[str, Any]]]:
    """A shape and an index expression as (kind, value) parts, valid for that shape.

    The parts index ``k`` of the dims; with an Ellipsis, those before it index the first dims
    and those after it the last ones. Integer arrays share one shape (they broadcast) and a bool
    mask comes alone (its count of true values would have to match them otherwise).
    """
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    k = draw(st.integers(0, len(shape)))
    ellipsis_at = draw(st.none() | st.integers(0, k))
    indexed = list(range(k)) if ellipsis_at is None else (
        list(range(ellipsis_at)) + list(range(len(shape) - (k - ellipsis_at), len(shape))))
    arrays_shape = draw(st.sampled_from([(2,), (3,), (2, 2)]))
    use_mask = draw(st.booleans())
    parts: list[tuple[str, Any]] = []
    for position, d in enumerate(indexed):
        if position == ellipsis_at:
            parts.append(("ellipsis", Ellipsis))
        if draw(st.booleans()):
            parts.append(("none", None))
        n = shape[d]
        kinds = ["int", "slice", "ints", "list", "tuple"] + (["mask"] if use_mask else [])
        kind = draw(st.sampled_from(kinds))
        if use_mask and kind in ("ints", "list", "tuple"):
            kind = "slice"
        if kind == "int":
            parts.append(("int", draw(st.integers(-n, n - 1))))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            step = draw(st.none() | st.integers(1, 3))  # PyTorch has no negative steps
            parts.append(("slice", slice(start, stop, step)))
        elif kind == "mask":
            use_mask = False  # one mask at most
            parts.append(("mask", np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))))
        else:
            size = int(np.prod(arrays_shape))
            values = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
            array = np.array(values, dtype=np.int64).reshape(arrays_shape)
            if kind == "ints" or array.ndim > 1:
                parts.append(("ints", array))
            else:
                parts.append((kind, list(values) if kind == "list" else tuple(values)))
    if ellipsis_at == len(indexed):
        parts.append(("ellipsis", Ellipsis))
    return shape, parts


def _key(parts: list[tuple[str, Any]], framework: str) -> tuple[Any, ...]:
    out = []
    for kind, value in parts:
        if kind in ("ints", "mask"):
            out.append(torch.as_tensor(value) if framework == "torch" else pb.tensor(value))
        else:
            out.append(value)
    return tuple(out)


def _valid_in_torch(x: Any, key: tuple[Any, ...]) -> Any:
    try:
        return x[key]
    except (IndexError, RuntimeError, ValueError):
        return None


@hypothesis.settings(max_examples=300, deadline=None, derandomize=True)
@hypothesis.given(shapes_and_keys(), st.integers(0, 2**31 - 1))
def test_indexing_matches_pytorch(case: Any, seed: int) -> None:
    shape, parts = case
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape)
    tx = torch.tensor(data, requires_grad=True)
    tkey = _key(parts, "torch")
    expected = _valid_in_torch(tx, tkey)
    hypothesis.assume(expected is not None)
    px = pb.tensor(data, requires_grad=True)
    pkey = _key(parts, "pullback")
    got = px[pkey]
    assert tuple(got.shape) == tuple(expected.shape), (shape, parts)
    np.testing.assert_array_equal(got.detach().numpy(), expected.detach().numpy())

    # The gradient: a random cotangent scatter-added back (repeated indices accumulate).
    cot = rng.standard_normal(tuple(expected.shape))
    (expected * torch.tensor(cot)).sum().backward()
    (got * pb.tensor(cot)).sum().backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)

    # __setitem__: values that depend only on the element written, so that repeated indices
    # write the same value in both frameworks.
    ty, py = torch.tensor(data), pb.tensor(data)
    ty[tkey] = ty[tkey] * 2 + 1
    py[pkey] = py[pkey] * 2 + 1
    np.testing.assert_array_equal(py.numpy(), ty.numpy())


def test_an_int_beside_advanced_indices_is_applied_first_as_in_pytorch() -> None:
    x = pb.arange(24).reshape(2, 3, 4)
    idx = pb.tensor([0, 2])
    assert tuple(x[0, :, idx].shape) == (3, 2)
    assert tuple(x[:, 1, idx].shape) == (2, 2)
    t = torch.arange(24).reshape(2, 3, 4)
    assert x[0, :, idx].tolist() == t[0, :, torch.tensor([0, 2])].tolist()


def test_a_tuple_inside_the_key_is_a_sequence() -> None:
    x = pb.arange(6).reshape(3, 2)
    assert x[(1, 0), :].tolist() == [[2, 3], [0, 1]]
    y = pb.zeros(3, 2)
    y[(2, 0), :] = 1.0
    assert y.tolist() == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
