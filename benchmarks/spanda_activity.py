"""Spike sparsity per layer, synaptic operations and the energy estimate of a trained SNN against
the same-size dense ANN, printed next to the seed's claims (96.50 % sparsity, 28.57x fewer
operations, 146.03x less energy).

Trains with examples/snn_fashion_mnist.py (784-1000-10 LIF, T = 25, Fashion-MNIST; its outputs
go to OUT/fashion_mnist_<encoding>/), then counts on the 10,000 test images and writes
OUT/energy_<encoding>.csv: one row per energy table of Horowitz (ISSCC 2014, 45 nm: float32
add 0.9 pJ, multiply 3.7 pJ; int32 0.1 / 3.1 pJ; int8 0.03 / 0.2 pJ).

    python benchmarks/spanda_activity.py --out docs/spanda                    # 5 epochs, direct
    python benchmarks/spanda_activity.py --out docs/spanda --encoding rate
    python benchmarks/spanda_activity.py --smoke --out /tmp/spanda            # seconds

Two ratios answer "how many fewer operations": against the ANN (one pass per image) and against
the same SNN evaluated densely (every input multiplied, zeros included, a constant input once as
in the event-driven count: what sparsity alone buys, the seed's 28.57x = 1 / (1 - 0.965)). The
energy ratios weight accumulates (one add) and multiply-accumulates (multiply + add); the seed's
146.03x is 28.57 x 4.6 / 0.9.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import sys

from _common import emit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import snn_fashion_mnist as example  # noqa: E402
from _nn_example import write_csv  # noqa: E402

from pullback.spanda.activity import LayerActivity, totals  # noqa: E402
from pullback.spanda.energy import HOROWITZ_45NM, estimate  # noqa: E402


def read_layers(path: str) -> list[LayerActivity]:
    """The per-layer counts the example wrote (activity.csv)."""
    kinds = {f.name: f.type for f in dataclasses.fields(LayerActivity)}
    with open(path) as f:
        rows = list(csv.DictReader(f))
    layers = []
    for row in rows:
        values = {}
        for name in kinds:
            raw = row[name]
            values[name] = raw if name == "name" else (raw == "True" if raw in ("True", "False")
                                                       else int(raw))
        layers.append(LayerActivity(**values))
    return layers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/spanda")
    parser.add_argument("--encoding", choices=("direct", "rate"), default="direct")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    run_dir = os.path.join(args.out, f"fashion_mnist_{args.encoding}")
    example_args = ["--out", run_dir, "--encoding", args.encoding, "--epochs", str(args.epochs)]
    summary = example.main(example_args + (["--smoke"] if args.smoke else []))
    layers = read_layers(os.path.join(run_dir, "activity.csv"))
    network = totals(layers)
    seed = example.SEED

    for layer in layers:
        emit(benchmark="spanda_sparsity", layer=layer.name, encoding=args.encoding,
             sparsity=round(layer.sparsity, 4), firing_rate=round(layer.firing_rate, 4),
             seed_sparsity=seed["sparsity"])
    emit(benchmark="spanda_sparsity", layer="network", encoding=args.encoding,
         sparsity=round(network.sparsity, 4), seed_sparsity=seed["sparsity"],
         snn_test_accuracy=summary["snn_test_accuracy"],
         ann_test_accuracy=summary["ann_test_accuracy"])
    synaptic = network.accumulates + network.multiply_accumulates
    emit(benchmark="spanda_operations", encoding=args.encoding,
         snn_accumulates=network.accumulates,
         snn_multiply_accumulates=network.multiply_accumulates,
         snn_neuron_updates=network.neuron_steps, ann_macs=network.ann_macs,
         fewer_ops_than_ann=round(network.ann_macs / synaptic, 3),
         fewer_ops_than_dense_snn=round(network.dense_ops / synaptic, 3),
         seed_fewer_operations=seed["fewer_operations"])

    rows = []
    for key, table in HOROWITZ_45NM.items():
        e = estimate(network, table)
        row = {"arithmetic": key, "add_pj": table.add_pj, "mult_pj": table.mult_pj,
               "snn_uj": e.snn_pj * 1e-6, "snn_synaptic_uj": e.snn_synaptic_pj * 1e-6,
               "ann_uj": e.ann_pj * 1e-6, "dense_snn_uj": e.dense_snn_pj * 1e-6,
               "ann_over_snn": e.ann_over_snn,
               "dense_over_event_driven": e.dense_over_event_driven,
               "seed_energy_reduction": seed["energy_reduction"],
               "test_images": summary["test_images"], "source": table.source}
        rows.append(row)
        emit(benchmark="spanda_energy", encoding=args.encoding,
             **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    write_csv(os.path.join(args.out, f"energy_{args.encoding}.csv"), rows)


if __name__ == "__main__":
    main()
