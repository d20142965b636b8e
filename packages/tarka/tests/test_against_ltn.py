"""Every connective and aggregator, and whole formulas, against LTNtorch (the field's reference)
in float64 to 1e-12: values and gradients."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback import tarka
from pullback.tarka import fuzzy

torch = pytest.importorskip("torch")
ltn = pytest.importorskip("ltn")
RTOL = 1e-12
# LTNtorch casts variables and predicate outputs to float32, so whole formulas are compared in
# float32 (both sides); connectives and aggregators are compared directly in float64.
F32_RTOL = 2e-6


def _truths(shape, seed):
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.0, 1.0, shape)
    values.flat[:2] = (0.0, 1.0)  # the ends, where the stable variants matter
    return values


CONNECTIVES = {
    "NotStandard": (fuzzy.NotStandard(), lambda: ltn.fuzzy_ops.NotStandard(), 1),
    "AndMin": (fuzzy.AndMin(), lambda: ltn.fuzzy_ops.AndMin(), 2),
    "AndProd-stable": (fuzzy.AndProd(True), lambda: ltn.fuzzy_ops.AndProd(True), 2),
    "AndProd": (fuzzy.AndProd(False), lambda: ltn.fuzzy_ops.AndProd(False), 2),
    "AndLuk": (fuzzy.AndLuk(), lambda: ltn.fuzzy_ops.AndLuk(), 2),
    "OrMax": (fuzzy.OrMax(), lambda: ltn.fuzzy_ops.OrMax(), 2),
    "OrProbSum-stable": (fuzzy.OrProbSum(True), lambda: ltn.fuzzy_ops.OrProbSum(True), 2),
    "OrProbSum": (fuzzy.OrProbSum(False), lambda: ltn.fuzzy_ops.OrProbSum(False), 2),
    "OrLuk": (fuzzy.OrLuk(), lambda: ltn.fuzzy_ops.OrLuk(), 2),
    "ImpliesKleeneDienes": (fuzzy.ImpliesKleeneDienes(), lambda: ltn.fuzzy_ops.ImpliesKleeneDienes(), 2),
    "ImpliesGodel": (fuzzy.ImpliesGodel(), lambda: ltn.fuzzy_ops.ImpliesGodel(), 2),
    "ImpliesReichenbach-stable": (fuzzy.ImpliesReichenbach(True),
                                  lambda: ltn.fuzzy_ops.ImpliesReichenbach(True), 2),
    "ImpliesReichenbach": (fuzzy.ImpliesReichenbach(False),
                           lambda: ltn.fuzzy_ops.ImpliesReichenbach(False), 2),
    "ImpliesGoguen-stable": (fuzzy.ImpliesGoguen(True), lambda: ltn.fuzzy_ops.ImpliesGoguen(True), 2),
    "ImpliesLuk": (fuzzy.ImpliesLuk(), lambda: ltn.fuzzy_ops.ImpliesLuk(), 2),
    "Equiv": (fuzzy.Equiv(fuzzy.AndProd(), fuzzy.ImpliesReichenbach()),
              lambda: ltn.fuzzy_ops.Equiv(ltn.fuzzy_ops.AndProd(), ltn.fuzzy_ops.ImpliesReichenbach()), 2),
}


@pytest.mark.parametrize("name", sorted(CONNECTIVES))
def test_connective_matches_ltn_values_and_gradients(name):
    ours, make_theirs, arity = CONNECTIVES[name]
    theirs = make_theirs()
    arrays = [_truths((5, 4), seed) for seed in range(arity)]
    xs = [pb.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = ours(*xs), theirs(*ts)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=RTOL, atol=1e-15)
    if ref.requires_grad:
        ref.sum().backward()
        if out.requires_grad:
            out.sum().backward()
        for x, t in zip(xs, ts):
            # An input the result does not depend on (ImpliesGodel's x) has no gradient in both.
            if t.grad is None:
                assert x.grad is None
                continue
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=RTOL, atol=1e-15)


AGGREGATORS = {
    "AggregMin": (fuzzy.AggregMin(), lambda: ltn.fuzzy_ops.AggregMin()),
    "AggregMean": (fuzzy.AggregMean(), lambda: ltn.fuzzy_ops.AggregMean()),
    "AggregPMean-p2": (fuzzy.AggregPMean(2), lambda: ltn.fuzzy_ops.AggregPMean(2)),
    "AggregPMean-p6-unstable": (fuzzy.AggregPMean(6, False), lambda: ltn.fuzzy_ops.AggregPMean(6, False)),
    "AggregPMeanError-p2": (fuzzy.AggregPMeanError(2), lambda: ltn.fuzzy_ops.AggregPMeanError(2)),
    "AggregPMeanError-p4": (fuzzy.AggregPMeanError(4), lambda: ltn.fuzzy_ops.AggregPMeanError(4)),
}


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("name", sorted(AGGREGATORS))
def test_aggregator_matches_ltn(name, masked):
    ours, make_theirs = AGGREGATORS[name]
    theirs = make_theirs()
    a = _truths((6, 5), 3)
    mask = np.random.default_rng(4).uniform(size=(6, 5)) > 0.3 if masked else None
    if masked:
        mask[:, 0] = True  # every column keeps at least one entry
    x, t = pb.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    out = ours(x, 0, mask=None if mask is None else pb.tensor(mask))
    ref = theirs(t, dim=0, mask=None if mask is None else torch.tensor(mask))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=RTOL)
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-15)


def _twin_models(seed):
    """One small MLP predicate in pullback and the same weights in torch (float32)."""
    rng = np.random.default_rng(seed)
    w1, b1 = rng.normal(size=(8, 4)).astype(np.float32), rng.normal(size=8).astype(np.float32)
    w2, b2 = rng.normal(size=(1, 8)).astype(np.float32), rng.normal(size=1).astype(np.float32)

    def ours(*xs):
        h = pb.cat(list(xs), 1)
        h = pb.relu(h @ pb.tensor(w1).T + pb.tensor(b1))
        return pb.sigmoid(h @ pb.tensor(w2).T + pb.tensor(b2))[:, 0]

    class Theirs(torch.nn.Module):
        def forward(self, *xs):
            h = torch.cat(list(xs), 1)
            h = torch.relu(h @ torch.tensor(w1).T + torch.tensor(b1))
            return torch.sigmoid(h @ torch.tensor(w2).T + torch.tensor(b2))[:, 0]

    return ours, Theirs()


def test_a_knowledge_base_matches_ltn():
    rng = np.random.default_rng(0)
    xs, ys = (rng.normal(size=s).astype(np.float32) for s in ((5, 2), (4, 2)))
    p_ours, p_theirs = _twin_models(1)  # binary predicate: 2 + 2 features
    q_ours_f, q_theirs_f = _twin_models(2)

    x_w = pb.tensor(xs, requires_grad=True)
    x, y = tarka.Variable("x", x_w), tarka.Variable("y", pb.tensor(ys))
    P = tarka.Predicate(func=p_ours)
    Q = tarka.Predicate(func=lambda a: q_ours_f(a, a))
    phi1 = tarka.forall(x, tarka.exists(y, P(x, y)))
    phi2 = tarka.forall([x, y], P(x, y) >> Q(y))
    phi3 = tarka.forall(x, Q(x) | ~Q(x), agg="min")
    sat = tarka.sat_agg(phi1, phi2, phi3)

    tx_w = torch.tensor(xs, requires_grad=True)
    tx, ty = ltn.Variable("x", tx_w), ltn.Variable("y", torch.tensor(ys))
    TP = ltn.Predicate(p_theirs)
    TQ = ltn.Predicate(func=lambda a: q_theirs_f(a, a))
    Or = ltn.Connective(ltn.fuzzy_ops.OrProbSum())
    Not = ltn.Connective(ltn.fuzzy_ops.NotStandard())
    Implies = ltn.Connective(ltn.fuzzy_ops.ImpliesReichenbach())
    Forall = ltn.Quantifier(ltn.fuzzy_ops.AggregPMeanError(p=2), quantifier="f")
    Exists = ltn.Quantifier(ltn.fuzzy_ops.AggregPMean(p=2), quantifier="e")
    ForallMin = ltn.Quantifier(ltn.fuzzy_ops.AggregMin(), quantifier="f")
    t1 = Forall(tx, Exists(ty, TP(tx, ty)))
    t2 = Forall([tx, ty], Implies(TP(tx, ty), TQ(ty)))
    t3 = ForallMin(tx, Or(TQ(tx), Not(TQ(tx))))
    tsat = ltn.fuzzy_ops.SatAgg()(t1, t2, t3)

    for ours, theirs in [(phi1, t1), (phi2, t2), (phi3, t3)]:
        assert ours.item() == pytest.approx(theirs.value.item(), rel=F32_RTOL)
    assert sat.item() == pytest.approx(tsat.item(), rel=F32_RTOL)
    sat.backward()
    tsat.backward()
    np.testing.assert_allclose(x_w.grad.numpy(), tx_w.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_open_formulas_keep_ltns_variable_axes():
    rng = np.random.default_rng(5)
    xs, ys = (rng.normal(size=s).astype(np.float32) for s in ((3, 2), (4, 2)))
    p_ours, p_theirs = _twin_models(3)
    x, y = tarka.Variable("x", pb.tensor(xs)), tarka.Variable("y", pb.tensor(ys))
    ours = tarka.Predicate(func=p_ours)(x, y)
    theirs = ltn.Predicate(p_theirs)(ltn.Variable("x", torch.tensor(xs)), ltn.Variable("y", torch.tensor(ys)))
    assert ours.free_vars == tuple(theirs.free_vars) == ("x", "y")
    np.testing.assert_allclose(ours.values.numpy(), theirs.value.numpy(), rtol=F32_RTOL)
    # The same predicate with the arguments swapped: axes follow the arguments' order.
    swapped = tarka.Predicate(func=p_ours)(y, x)
    assert swapped.free_vars == ("y", "x") and swapped.shape == (4, 3)


def test_diagonal_quantification_matches_ltn():
    rng = np.random.default_rng(6)
    xs, ys = (rng.normal(size=s).astype(np.float32) for s in ((5, 2), (5, 2)))
    p_ours, p_theirs = _twin_models(4)
    x, y = tarka.diag(tarka.Variable("x", pb.tensor(xs)), tarka.Variable("y", pb.tensor(ys)))
    ours = tarka.forall([x, y], tarka.Predicate(func=p_ours)(x, y))
    tx, ty = ltn.diag(ltn.Variable("x", torch.tensor(xs)), ltn.Variable("y", torch.tensor(ys)))
    Forall = ltn.Quantifier(ltn.fuzzy_ops.AggregPMeanError(p=2), quantifier="f")
    theirs = Forall([tx, ty], ltn.Predicate(p_theirs)(tx, ty))
    assert ours.item() == pytest.approx(theirs.value.item(), rel=F32_RTOL)


def test_guarded_quantifier_matches_ltn():
    rng = np.random.default_rng(7)
    xs, ys = (rng.normal(size=s).astype(np.float32) for s in ((6, 2), (5, 2)))
    p_ours, p_theirs = _twin_models(5)
    x, y = tarka.Variable("x", pb.tensor(xs)), tarka.Variable("y", pb.tensor(ys))
    ours = tarka.forall([x, y], tarka.Predicate(func=p_ours)(x, y), cond_vars=[x, y],
                        cond_fn=lambda a, b: (a[:, 0] + b[:, 0]) > 0.0)
    tx, ty = ltn.Variable("x", torch.tensor(xs)), ltn.Variable("y", torch.tensor(ys))
    Forall = ltn.Quantifier(ltn.fuzzy_ops.AggregPMeanError(p=2), quantifier="f")
    theirs = Forall([tx, ty], ltn.Predicate(p_theirs)(tx, ty), cond_vars=[tx, ty],
                    cond_fn=lambda a, b: (a.value[:, 0] + b.value[:, 0]) > 0.0)
    assert ours.item() == pytest.approx(theirs.value.item(), rel=F32_RTOL)
