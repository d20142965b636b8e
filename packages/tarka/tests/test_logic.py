"""LogicTensor semantics, quantifiers, axioms, gradients (gradcheck) and the bad-input errors."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import tarka
from pullback.testing import gradcheck


def _lt(values, free_vars=("x",), semantics="product"):
    return tarka.LogicTensor(pb.tensor(values, dtype=pb.float64), free_vars, semantics)


@pytest.mark.parametrize("semantics", ["product", "lukasiewicz", "goedel"])
def test_operators_follow_the_semantics(semantics):
    a, b = _lt([0.2, 0.7, 1.0]), _lt([0.5, 0.4, 0.0])
    a, b = (tarka.LogicTensor(t.values, t.free_vars, semantics) for t in (a, b))
    s = tarka.semantics.resolve(semantics)
    for got, expected in [(a & b, s.and_(a.values, b.values)), (a | b, s.or_(a.values, b.values)),
                          (a >> b, s.implies(a.values, b.values)), (~a, s.not_(a.values)),
                          (a ^ b, s.equiv(a.values, b.values)), (a.iff(b), s.equiv(a.values, b.values))]:
        np.testing.assert_allclose(got.values.numpy(), expected.numpy(), rtol=1e-15)


def test_lukasiewicz_and_goedel_connectives_have_their_textbook_values():
    a, b = _lt([0.2, 0.7]), _lt([0.5, 0.6])
    luk = [tarka.LogicTensor(t.values, t.free_vars, "lukasiewicz") for t in (a, b)]
    np.testing.assert_allclose((luk[0] & luk[1]).values.numpy(), [0.0, 0.3], atol=1e-15)
    np.testing.assert_allclose((luk[0] | luk[1]).values.numpy(), [0.7, 1.0], atol=1e-15)
    np.testing.assert_allclose((luk[0] >> luk[1]).values.numpy(), [1.0, 0.9], atol=1e-15)
    god = [tarka.LogicTensor(t.values, t.free_vars, "goedel") for t in (a, b)]
    np.testing.assert_allclose((god[0] & god[1]).values.numpy(), [0.2, 0.6])
    np.testing.assert_allclose((god[0] >> god[1]).values.numpy(), [1.0, 0.6])


def test_operands_broadcast_over_their_variables():
    p, q = _lt([0.1, 0.9], ("x",)), _lt([0.3, 0.5, 0.8], ("y",))
    both = p & q
    assert both.free_vars == ("x", "y") and both.shape == (2, 3)
    np.testing.assert_allclose(both.values.numpy(),
                               np.outer(0.9999 * np.array([0.1, 0.9]) + 1e-4,
                                        0.9999 * np.array([0.3, 0.5, 0.8]) + 1e-4), rtol=1e-14)
    r = _lt(np.random.default_rng(0).uniform(size=(3, 2)), ("y", "x"))
    mixed = both >> r  # r's axes are permuted into (x, y)
    assert mixed.free_vars == ("x", "y")
    np.testing.assert_allclose(mixed.values.numpy(),
                               tarka.fuzzy.ImpliesReichenbach()(both.values, r.values.T).numpy())


def test_a_variable_used_twice_is_its_diagonal():
    x = tarka.Variable("x", pb.tensor([[1.0], [2.0], [3.0]], dtype=pb.float64))
    r = tarka.Predicate(func=lambda a, b: pb.sigmoid(a[:, 0] - b[:, 0]))
    assert r(x, x).shape == (3,)
    np.testing.assert_allclose(r(x, x).values.numpy(), 0.5)


def test_quantifiers_aggregate_named_axes():
    phi = _lt(np.random.default_rng(1).uniform(size=(4, 3)), ("x", "y"))
    some = tarka.exists("y", phi, agg="max")
    np.testing.assert_allclose(some.values.numpy(), phi.values.numpy().max(1))
    every = tarka.forall(["x", "y"], phi, agg="min")
    assert every.free_vars == () and every.item() == pytest.approx(phi.values.numpy().min())
    mean = tarka.forall("x", phi, agg="mean")
    np.testing.assert_allclose(mean.values.numpy(), phi.values.numpy().mean(0))


def test_smooth_quantifiers_tend_to_min_and_max():
    values = np.array([0.9, 0.2, 0.6, 0.95])
    phi = _lt(values)
    cold = tarka.forall("x", phi, agg="softmin", temperature=1e-3).item()
    warm = tarka.forall("x", phi, agg="softmin", temperature=1e3).item()
    assert cold == pytest.approx(0.2, abs=1e-6) and warm == pytest.approx(values.mean(), abs=1e-3)
    lse_min = tarka.forall("x", phi, agg="logsumexp", temperature=1e-3).item()
    lse_max = tarka.exists("x", phi, agg="logsumexp", temperature=1e-3).item()
    assert lse_min == pytest.approx(0.2, abs=5e-3) and lse_max == pytest.approx(0.95, abs=5e-3)


def _violation_share(temperature):
    """The share of |d forall / d x| carried by the violating instances (truth < 0.5)."""
    values = np.linspace(0.02, 0.98, 50)
    x = pb.tensor(values, requires_grad=True)
    tarka.forall("x", tarka.LogicTensor(x, ("x",)), agg="softmin", temperature=temperature).values.backward()
    g = np.abs(x.grad.numpy())
    return g[values < 0.5].sum() / g.sum()


def test_softmin_gradient_concentrates_on_violations_as_the_temperature_falls():
    shares = [_violation_share(t) for t in (1.0, 0.3, 0.1, 0.03)]
    assert all(a < b for a, b in zip(shares, shares[1:]))
    assert shares[-1] > 0.999  # the seed's "100%" holds only in the cold limit


def test_axioms_on_a_known_relation():
    # x < y on the integers 0..4 as a crisp relation: transitive and asymmetric, not symmetric.
    x = tarka.Variable("x", pb.arange(5, dtype=pb.float64).reshape(5, 1))
    less = tarka.Predicate(func=lambda a, b: (a[:, 0] < b[:, 0]).to(pb.float64))
    kw = {"agg": "min"}
    assert tarka.axioms.transitivity(less, x, **kw).item() == pytest.approx(1.0, abs=1e-3)
    assert tarka.axioms.asymmetry(less, x, **kw).item() == pytest.approx(1.0, abs=1e-3)
    assert tarka.axioms.irreflexivity(less, x, **kw).item() == pytest.approx(1.0, abs=1e-3)
    assert tarka.axioms.totality(less, x, **kw).item() == pytest.approx(1.0, abs=1e-3)
    assert tarka.axioms.symmetry(less, x, **kw).item() < 0.01
    assert tarka.axioms.reflexivity(less, x, **kw).item() < 0.01


def test_exactly_one_and_mutual_exclusion_axioms():
    x = tarka.Variable("x", pb.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=pb.float64))
    a = tarka.Predicate(func=lambda v: v[:, 0])
    b = tarka.Predicate(func=lambda v: v[:, 1])
    assert tarka.axioms.exactly_one([a, b], x, agg="min").item() > 0.999
    assert tarka.axioms.mutual_exclusion([a, b], x, agg="min").item() > 0.999
    both = tarka.Predicate(func=lambda v: v[:, 0] * 0 + 1.0)
    assert tarka.axioms.mutual_exclusion([a, both], x, agg="min").item() < 0.01
    assert tarka.axioms.implication(a, both, x, agg="min").item() > 0.999


AGGREGATORS = ["mean", "pmean", "pmean_error", "softmin", "logsumexp"]


@pytest.mark.parametrize("agg", AGGREGATORS)
def test_quantifiers_gradcheck(agg):
    v = pb.tensor(np.random.default_rng(2).uniform(0.1, 0.9, (3, 4)), requires_grad=True)
    assert gradcheck(lambda t: tarka.forall("x", tarka.LogicTensor(t, ("x", "y")), agg=agg).values,
                     (v,))


@pytest.mark.parametrize("semantics", ["product", "lukasiewicz", "goedel"])
def test_connectives_gradcheck(semantics):
    rng = np.random.default_rng(3)
    a = pb.tensor(rng.uniform(0.1, 0.9, 5), requires_grad=True)
    b = pb.tensor(rng.uniform(0.1, 0.9, 5), requires_grad=True)

    def fn(u, v):
        p, q = tarka.LogicTensor(u, ("x",), semantics), tarka.LogicTensor(v, ("x",), semantics)
        return ((p & q) | ~(p >> q)).values

    assert gradcheck(fn, (a, b))


def test_bad_input_errors():
    with pytest.raises(ValueError, match=r"\[0, 1\].*clamp=True"):
        _lt([0.5, 1.2])
    with pytest.warns(RuntimeWarning, match="clipped"):
        clipped = tarka.LogicTensor(pb.tensor([-0.1, 0.5]), ("x",), clamp=True)
    np.testing.assert_allclose(clipped.values.numpy(), [0.0, 0.5])
    with pytest.raises(ValueError, match="unknown semantics 'fuzzy'"):
        _lt([0.5], semantics="fuzzy")
    with pytest.raises(ValueError, match=r"cannot quantify over \['z'\].*\['x'\]"):
        tarka.forall("z", _lt([0.5]))
    with pytest.raises(ValueError, match="unknown aggregator"):
        tarka.forall("x", _lt([0.5]), agg="median")
    with pytest.raises(ValueError, match="semantics"):
        _lt([0.5]) & _lt([0.5], semantics="goedel")
    bad = tarka.Predicate(func=lambda v: v[:, 0] * 3.0)
    with pytest.raises(ValueError, match="Predicate"):
        bad(tarka.Variable("x", pb.ones(2, 1)))
    with pytest.raises(pb.ShapeError, match="'x' has 2 individuals"):
        _lt([0.1, 0.2]) & _lt([0.1, 0.2, 0.3])
    with pytest.raises(pb.ShapeError, match="closed"):
        tarka.sat_agg(_lt([0.5, 0.5]))
