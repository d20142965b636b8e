"""One knowledge-base satisfaction step (forward, 1 - SatAgg as the loss, backward, Adam step) in
pullback.tarka and in LTNtorch (the field's reference), same formulas, same weights, same batch,
in one process. Target: no slower than LTNtorch (ratio <= 1).

The knowledge base is LTN's "binary classification + relation" pattern: two MLP predicates
A(x), B(x) over 2-d points and a relation R(x, y) over pairs, with

    forall x in positives: A(x)                 forall x in negatives: ~A(x)
    forall x: A(x) | B(x)                       forall x, y: (A(x) & A(y)) >> R(x, y)
    forall x: exists y: R(x, y)

for batches of 16, 64 and 256 points per variable (the relation formulas range over all pairs).
LTNtorch computes in float32 (it casts variables and predicate outputs), so both sides do.

    python benchmarks/tarka_vs_ltn.py --threads 1 --clock cpu --order interleaved \
        [--rounds 5] [--csv docs/tarka/kb_step.csv]

Each round times every batch size once; each JSON line carries the 1-minute load average at its
end, since on a shared machine the ratio moves with the load. ``--csv`` writes every round.
"""

from __future__ import annotations

from _nn_bench import report, time_pair, torch_module  # first: applies --threads

import argparse
import os

import numpy as np
from _common import write_csv

import pullback
from pullback import nn, optim, tarka

TARGET = 1.0
BATCHES = (16, 64, 256)
# The target, printed next to each measured ratio.
CLAIM = "no slower than LTNtorch (ratio <= 1)"


def mlp_pair(torch, inputs: int, seed: int):
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, 0.5, (16, inputs)).astype(np.float32)
    b1 = np.zeros(16, np.float32)
    w2 = rng.normal(0, 0.5, (1, 16)).astype(np.float32)
    b2 = np.zeros(1, np.float32)
    ours = nn.Sequential(nn.Linear(inputs, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid())
    ours.load_state_dict({"0.weight": w1, "0.bias": b1, "2.weight": w2, "2.bias": b2})
    theirs = torch.nn.Sequential(torch.nn.Linear(inputs, 16), torch.nn.ReLU(),
                                 torch.nn.Linear(16, 1), torch.nn.Sigmoid())
    theirs.load_state_dict({k: torch.from_numpy(v) for k, v in
                            {"0.weight": w1, "0.bias": b1, "2.weight": w2, "2.bias": b2}.items()})
    return ours, theirs


class _Pair(nn.Module):
    def __init__(self, mlp):
        super().__init__()
        self.mlp = mlp

    def forward(self, x, y):
        return self.mlp(pullback.cat([x, y], 1))


def ours_step(points: np.ndarray, labels: np.ndarray, models: list):
    """The knowledge base's training step in pullback.tarka."""
    a, b, r = models
    A, B, R = tarka.Predicate(a), tarka.Predicate(b), tarka.Predicate(_Pair(r))
    opt = optim.Adam([*a.parameters(), *b.parameters(), *r.parameters()], lr=1e-3)
    x = tarka.Variable("x", pullback.from_numpy(points))
    y = tarka.Variable("y", pullback.from_numpy(points))
    x_pos = tarka.Variable("xp", pullback.from_numpy(points[labels]))
    x_neg = tarka.Variable("xn", pullback.from_numpy(points[~labels]))

    def step() -> None:
        sat = tarka.sat_agg(
            tarka.forall(x_pos, A(x_pos)), tarka.forall(x_neg, ~A(x_neg)),
            tarka.forall(x, A(x) | B(x)),
            tarka.forall([x, y], (A(x) & A(y)) >> R(x, y)),
            tarka.forall(x, tarka.exists(y, R(x, y))))
        opt.zero_grad()
        (1.0 - sat).backward()
        opt.step()

    return step


def ltn_step(torch, ltn, points: np.ndarray, labels: np.ndarray, models: list):
    """The same step in LTNtorch."""
    a, b, r = models

    class Pair(torch.nn.Module):
        def __init__(self, mlp):
            super().__init__()
            self.mlp = mlp

        def forward(self, x, y):
            return self.mlp(torch.cat([x, y], 1))

    A, B, R = ltn.Predicate(a), ltn.Predicate(b), ltn.Predicate(Pair(r))
    opt = torch.optim.Adam([*a.parameters(), *b.parameters(), *r.parameters()], lr=1e-3)
    ops = ltn.fuzzy_ops
    Not, And = ltn.Connective(ops.NotStandard()), ltn.Connective(ops.AndProd())
    Or, Implies = ltn.Connective(ops.OrProbSum()), ltn.Connective(ops.ImpliesReichenbach())
    Forall = ltn.Quantifier(ops.AggregPMeanError(p=2), quantifier="f")
    Exists = ltn.Quantifier(ops.AggregPMean(p=2), quantifier="e")
    sat_agg = ops.SatAgg()
    x = ltn.Variable("x", torch.from_numpy(points))
    y = ltn.Variable("y", torch.from_numpy(points))
    x_pos = ltn.Variable("xp", torch.from_numpy(points[labels]))
    x_neg = ltn.Variable("xn", torch.from_numpy(points[~labels]))

    def step() -> None:
        sat = sat_agg(
            Forall(x_pos, A(x_pos)), Forall(x_neg, Not(A(x_neg))),
            Forall(x, Or(A(x), B(x))),
            Forall([x, y], Implies(And(A(x), A(y)), R(x, y))),
            Forall(x, Exists(y, R(x, y))))
        opt.zero_grad()
        (1.0 - sat).backward()
        opt.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="times to measure every batch")
    parser.add_argument("--csv", help="write every round's figures to this CSV file")
    args, _ = parser.parse_known_args()  # --threads, --clock, --order: read by _nn_bench
    torch = torch_module()
    import ltn

    steps = {}
    for batch in BATCHES:
        rng = np.random.default_rng(batch)
        points = rng.normal(size=(batch, 2)).astype(np.float32)
        labels = points[:, 0] > 0
        pairs = [mlp_pair(torch, n, s) for n, s in ((2, 1), (2, 2), (4, 3))]
        steps[batch] = (ours_step(points, labels, [p[0] for p in pairs]),
                        ltn_step(torch, ltn, points, labels, [p[1] for p in pairs]))
    rows = []
    for round_ in range(1, args.rounds + 1):
        for batch, (ours, theirs) in steps.items():
            ours_s, theirs_s = time_pair(ours, theirs, block=5)
            load = round(os.getloadavg()[0], 2)
            report("tarka_kb_step", ours_s, theirs_s, TARGET, batch=batch, pairs=batch * batch,
                   round=round_, load_average_1min=load, claim=CLAIM)
            rows.append({"round": round_, "points_per_variable": batch, "pairs": batch * batch,
                         "pullback_ms": round(ours_s * 1e3, 3),
                         "ltntorch_ms": round(theirs_s * 1e3, 3),
                         "ratio": round(ours_s / theirs_s, 3), "load_average_1min": load})
    if args.csv:
        write_csv(args.csv, rows)


if __name__ == "__main__":
    main()
