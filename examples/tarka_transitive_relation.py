"""Learn a strict total order from axioms alone, with pullback.tarka: zero labelled pairs.

Forty entities are random 8-d feature vectors. A neural relation R(a, b) = sigmoid(MLP([a, b]))
is trained only to satisfy the axioms of a strict total order (transitivity, asymmetry,
irreflexivity and totality on distinct entities) over the first 30 entities. The script then
measures how well R satisfies each axiom on held-out triples that involve the 10 entities never
seen in training: the fuzzy satisfaction (LTN's p-mean error, p = 2) and the share of crisp
triples (R thresholded at 0.5) that satisfy the axiom, before and after training.

    python examples/tarka_transitive_relation.py            # about a minute
    python examples/tarka_transitive_relation.py --smoke    # a few seconds
"""

from __future__ import annotations

import json
import os

import numpy as np

import pullback
from _example import example_parser, output_dir
from _nn_example import write_csv

from pullback import optim, tarka

AXIOMS = ("transitivity", "asymmetry", "irreflexivity", "totality")


def crisp_shares(relation: tarka.Predicate, held_out: np.ndarray, seen: np.ndarray) -> dict:
    """Share of crisp triples (a, b, c) satisfying each axiom, where every triple holds at least
    one held-out entity; R(a, b) thresholded at 0.5."""
    entities = np.concatenate([seen, held_out])
    n, k = len(entities), len(held_out)
    x = tarka.Variable("x", pullback.from_numpy(entities))
    y = tarka.Variable("y", pullback.from_numpy(entities))
    with pullback.no_grad():
        r = relation(x, y).values.numpy() > 0.5
    new = np.zeros(n, dtype=bool)
    new[n - k:] = True
    pair_new = new[:, None] | new[None, :]
    triple_new = pair_new[:, :, None] | new[None, None, :]
    distinct = ~np.eye(n, dtype=bool)
    trans = ~(r[:, :, None] & r[None, :, :]) | r[:, None, :]
    return {
        "transitivity": float(trans[triple_new].mean()),
        "asymmetry": float((~(r & r.T))[pair_new & distinct].mean()),
        "irreflexivity": float((~np.diag(r))[new].mean()),
        "totality": float((r | r.T)[pair_new & distinct].mean()),
    }


def fuzzy_sat(relation: tarka.Predicate, entities: np.ndarray) -> dict:
    x = tarka.Variable("e", pullback.from_numpy(entities))
    with pullback.no_grad():
        return {name: getattr(tarka.axioms, name)(relation, x).item() for name in AXIOMS}


def main() -> None:
    parser = example_parser(__doc__, __file__)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    steps = 100 if args.smoke else args.steps

    rng = np.random.default_rng(args.seed)
    entities = rng.normal(size=(40, 8)).astype(np.float32)
    seen, held_out = entities[:30], entities[30:]
    pullback.manual_seed(args.seed)
    relation = tarka.NeuralRelation(8, hidden=32)
    opt = optim.Adam(relation.parameters(), lr=3e-3)
    x = tarka.Variable("e", pullback.from_numpy(seen))

    before = {"crisp": crisp_shares(relation, held_out, seen), "fuzzy": fuzzy_sat(relation, entities)}
    for _ in range(steps):
        sat = tarka.sat_agg(*(getattr(tarka.axioms, name)(relation, x) for name in AXIOMS))
        opt.zero_grad()
        (1.0 - sat).backward()
        opt.step()
    after = {"crisp": crisp_shares(relation, held_out, seen), "fuzzy": fuzzy_sat(relation, entities)}

    rows = [{"axiom": name, "stage": stage, "crisp_share_held_out": round(r["crisp"][name], 4),
             "fuzzy_sat_all_entities": round(r["fuzzy"][name], 4)}
            for stage, r in (("before", before), ("after", after)) for name in AXIOMS]
    output_dir(args.out)
    write_csv(os.path.join(args.out, "axioms.csv"), rows)
    print(json.dumps({"steps": steps, "labelled_pairs": 0, "before": before, "after": after}))


if __name__ == "__main__":
    main()
