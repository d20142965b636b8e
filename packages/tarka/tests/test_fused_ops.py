"""The fused ops of ``pullback.tarka._ops``: forward values bitwise those of the same formula
composed of core ops (float32 and float64, broadcast operands), gradients by gradcheck and
second derivatives by gradgradcheck, with and without LTN's stable projections. (Against
LTNtorch itself: test_against_ltn.py, which runs through these ops.)"""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import registry
from pullback.dispatch import apply
from pullback.tarka import _ops
from pullback.testing import gradcheck, gradgradcheck

EPS = 1e-4


def _pi_0(x, stable):
    return (1.0 - EPS) * x + EPS if stable else x


def _pi_1(x, stable):
    return (1.0 - EPS) * x if stable else x


# The formulas written out with core ops (LTN's definitions), independently of _ops.
COMPOSED_CONNECTIVES = {
    _ops.AND_PROD: lambda x, y, s: _pi_0(x, s) * _pi_0(y, s),
    _ops.OR_PROB_SUM: lambda x, y, s: _pi_1(x, s) + _pi_1(y, s) - _pi_1(x, s) * _pi_1(y, s),
    _ops.IMPLIES_REICHENBACH: lambda x, y, s: 1.0 - _pi_0(x, s) + _pi_0(x, s) * _pi_1(y, s),
}
COMPOSED_AGGREGATORS = {
    _ops.PMEAN: lambda x, axis, keep, p, s: (_pi_0(x, s) ** p).mean(axis, keepdim=keep) ** (1 / p),
    _ops.PMEAN_ERROR: lambda x, axis, keep, p, s: 1.0 - ((1.0 - _pi_1(x, s)) ** p).mean(
        axis, keepdim=keep) ** (1 / p),
}
CONNECTIVES = list(COMPOSED_CONNECTIVES)
AGGREGATORS = list(COMPOSED_AGGREGATORS)
# (x's shape, y's shape): equal, broadcast both ways (the pair grid of P(x) & Q(y)), 0-d
SHAPES = [((5,), (5,)), ((4, 1), (1, 3)), ((3, 4), (4,)), ((), (2, 2))]


def _truth(shape, seed, dtype=np.float64):
    return np.random.default_rng(seed).uniform(0.02, 0.98, size=shape).astype(dtype)


def test_the_plugin_registers_every_fused_op():
    for op in _ops.TARKA_OPS:
        assert registry.OPS[op.name] is op
        assert registry.OP_OWNERS[op.name] == "pullback-tarka"


@pytest.mark.parametrize("op", CONNECTIVES, ids=lambda op: op.name)
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_connectives_compute_the_composed_formula_bitwise(op, shapes, stable, dtype):
    x, y = (pb.tensor(_truth(s, i, dtype)) for i, s in enumerate(shapes))
    got = apply(op, x, y, stable=stable)
    want = COMPOSED_CONNECTIVES[op](x, y, stable)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("op", CONNECTIVES, ids=lambda op: op.name)
@pytest.mark.parametrize("shapes", SHAPES[:3])
@pytest.mark.parametrize("stable", [True, False])
def test_connectives_gradcheck_and_gradgradcheck(op, shapes, stable):
    x, y = (pb.tensor(_truth(s, i + 3), requires_grad=True) for i, s in enumerate(shapes))

    def fn(a, b):
        return apply(op, a, b, stable=stable)

    assert gradcheck(fn, (x, y), atol=1e-7, rtol=1e-6)
    assert gradgradcheck(fn, (x, y), atol=1e-7, rtol=1e-6)


AXES = [(None, False), (0, False), (1, True), ((0, 2), False), ((-1,), True), ((0, 1, 2), True)]


@pytest.mark.parametrize("op", AGGREGATORS, ids=lambda op: op.name)
@pytest.mark.parametrize("axis,keepdims", AXES)
@pytest.mark.parametrize("p", [1, 2, 3.5])
@pytest.mark.parametrize("stable", [True, False])
def test_aggregators_compute_the_composed_formula(op, axis, keepdims, p, stable):
    for dtype in (np.float64, np.float32):
        x = pb.tensor(_truth((3, 4, 2), 7, dtype))
        got = apply(op, x, axis=axis, keepdims=keepdims, p=p, stable=stable)
        want = COMPOSED_AGGREGATORS[op](x, axis, keepdims, p, stable)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("op", AGGREGATORS, ids=lambda op: op.name)
@pytest.mark.parametrize("axis,keepdims", AXES[:4])
@pytest.mark.parametrize("p", [1, 2, 3.5])
@pytest.mark.parametrize("stable", [True, False])
def test_aggregators_gradcheck_and_gradgradcheck(op, axis, keepdims, p, stable):
    x = pb.tensor(_truth((3, 4, 2), 11), requires_grad=True)

    def fn(a):
        return apply(op, a, axis=axis, keepdims=keepdims, p=p, stable=stable)

    assert gradcheck(fn, (x,), atol=1e-7, rtol=1e-6)
    assert gradgradcheck(fn, (x,), atol=1e-7, rtol=1e-6)


@pytest.mark.parametrize("op", AGGREGATORS, ids=lambda op: op.name)
def test_aggregator_gradients_agree_with_the_composition_to_rounding(op):
    # a 256 x 256 grid in float32, as a knowledge base's pair formulas have
    values = _truth((256, 256), 13, np.float32)
    grads = []
    for fn in (lambda a: apply(op, a, axis=(0, 1), keepdims=False, p=2, stable=True),
               lambda a: COMPOSED_AGGREGATORS[op](a, (0, 1), False, 2, True)):
        x = pb.tensor(values, requires_grad=True)
        fn(x).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=2e-6, atol=0)


# (the term's expanded shape, the grid's variable sizes): a variable over a second one, the
# second over the first, scalar individuals, a constant (no variable), three variables
GRIDS = [((4, 1, 2), (4, 3)), ((1, 3, 2), (4, 3)), ((4, 1), (4, 5)), ((3,), ()),
         ((2, 1, 3, 2, 2), (2, 4, 3))]


@pytest.mark.parametrize("expanded,sizes", GRIDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_grid_rows_are_the_broadcast_flattened(expanded, sizes, dtype):
    values = np.random.default_rng(len(expanded)).uniform(-3, 3, size=expanded).astype(dtype)
    features = expanded[len(sizes):]
    shape = (*sizes, *features)
    want = np.broadcast_to(values, shape).reshape(-1, *features)
    got = apply(_ops.GRID_ROWS, pb.tensor(values), shape=shape, n_vars=len(sizes))
    assert got.dtype == pb.tensor(values).dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_grid_rows_of_a_permuted_term():
    # expand_to permutes a term's axes into the formula's variable order: a strided view
    base = np.random.default_rng(2).standard_normal((2, 1, 4)).astype(np.float32)
    term = pb.tensor(base).permute(2, 1, 0)  # (4, 1, 2), not contiguous
    got = apply(_ops.GRID_ROWS, term, shape=(4, 3, 2), n_vars=2)
    want = np.broadcast_to(base.transpose(2, 1, 0), (4, 3, 2)).reshape(12, 2)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("expanded,sizes", GRIDS)
def test_grid_rows_gradcheck_and_gradgradcheck(expanded, sizes):
    x = pb.tensor(np.random.default_rng(1).standard_normal(expanded), requires_grad=True)
    shape = (*sizes, *expanded[len(sizes):])

    def fn(a):
        return apply(_ops.GRID_ROWS, a, shape=shape, n_vars=len(sizes))

    assert gradcheck(fn, (x,), atol=1e-7, rtol=1e-6)
    assert gradgradcheck(fn, (x,), atol=1e-7, rtol=1e-6)


def _central_difference(fn, primals, tangents, h=1e-6):
    ahead = fn(*(p + h * t for p, t in zip(primals, tangents)))
    behind = fn(*(p - h * t for p, t in zip(primals, tangents)))
    return (ahead.numpy() - behind.numpy()) / (2 * h)


@pytest.mark.parametrize("op", CONNECTIVES, ids=lambda op: op.name)
@pytest.mark.parametrize("stable", [True, False])
def test_connective_jvp_matches_central_differences(op, stable):
    func = pytest.importorskip("pullback.func")
    rng = np.random.default_rng(17)
    x, y = pb.tensor(_truth((4, 1), 5)), pb.tensor(_truth((1, 3), 6))
    tx, ty = (pb.tensor(rng.standard_normal(t.shape)) for t in (x, y))

    def fn(a, b):
        return apply(op, a, b, stable=stable)

    _, tangent = func.jvp(fn, (x, y), (tx, ty))
    np.testing.assert_allclose(tangent.numpy(), _central_difference(fn, (x, y), (tx, ty)),
                               atol=1e-8)
    _, tangent = func.jvp(lambda a: fn(a, y), (x,), (tx,))  # the other input held constant
    np.testing.assert_allclose(tangent.numpy(),
                               _central_difference(lambda a: fn(a, y), (x,), (tx,)), atol=1e-8)


@pytest.mark.parametrize("op", AGGREGATORS, ids=lambda op: op.name)
@pytest.mark.parametrize("axis,keepdims", AXES[:4])
@pytest.mark.parametrize("p", [2, 3.5])
def test_aggregator_jvp_matches_central_differences(op, axis, keepdims, p):
    func = pytest.importorskip("pullback.func")
    x = pb.tensor(_truth((3, 4, 2), 19))
    t = pb.tensor(np.random.default_rng(19).standard_normal(x.shape))

    def fn(a):
        return apply(op, a, axis=axis, keepdims=keepdims, p=p, stable=True)

    _, tangent = func.jvp(fn, (x,), (t,))
    np.testing.assert_allclose(tangent.numpy(), _central_difference(fn, (x,), (t,)), atol=1e-8)


def test_grid_rows_jvp_is_the_grid_of_the_tangent():
    func = pytest.importorskip("pullback.func")
    x = pb.tensor(np.random.default_rng(23).standard_normal((4, 1, 2)))
    t = pb.tensor(np.random.default_rng(24).standard_normal((4, 1, 2)))
    _, tangent = func.jvp(lambda a: apply(_ops.GRID_ROWS, a, shape=(4, 3, 2), n_vars=2), (x,), (t,))
    np.testing.assert_array_equal(tangent.numpy(),
                                  np.broadcast_to(t.numpy(), (4, 3, 2)).reshape(12, 2))


def test_grid_rows_share_the_terms_memory_only_as_a_tracked_view():
    values = pb.tensor(np.random.default_rng(4).standard_normal((6, 2)))
    same = apply(_ops.GRID_ROWS, values, shape=(6, 2), n_vars=1)  # nothing to broadcast
    assert np.shares_memory(same.numpy(), values.numpy()) and same._base is values
    grid = apply(_ops.GRID_ROWS, values.reshape(6, 1, 2), shape=(6, 3, 2), n_vars=2)
    assert not np.shares_memory(grid.numpy(), values.numpy()) and grid._base is None
