"""Training step of a two-layer SNN (784-1000-10 LIF, beta 0.95, fast-sigmoid surrogate, T = 25,
batch 128, spike-count cross-entropy, Adam): pullback-spanda vs snnTorch on the CPU, in one
process, same starting weights and data. Target: no slower than snnTorch (ratio <= 1).

Variants, each printed as one JSON line with its ratio to snnTorch's tutorial loop on the same
input (``encoding``):

* ``snntorch_loop``: snnTorch's tutorial loop, one call of ``fc1``, ``lif1``, ``fc2``, ``lif2``
  per step (the reference);
* ``snntorch_hoisted``: the same with ``fc1(x)`` computed once (direct input only: what our
  layers do for a constant input), so that the gain of that shortcut shows apart;
* ``pullback_sequential``: ``SpikingSequential``: each synapse over all steps at once, each
  neuron's sequence in two fused ops;
* ``pullback_step_loop``: snnTorch's loop written with pullback (``LIF`` called per step: two
  fused ops per neuron and step);
* ``pullback_composite_loop``: the same loop with the LIF update written out in core ops
  (decay, add, reset, step): what the fused per-step op saves.

    python benchmarks/spanda_step.py                          # 2 threads, wall clock
    python benchmarks/spanda_step.py --threads 1 --clock cpu  # work per step, busy machine
    python benchmarks/spanda_step.py --encoding rate          # Poisson input (T x B x 784)
    python benchmarks/spanda_step.py --hidden 100 --batch 16  # small: per-step overhead rules
    python benchmarks/spanda_step.py --neuron-only            # the LIF time loop alone

``--neuron-only`` times the neurons without synapses: 25 steps of one LIF layer (batch 128,
``--hidden`` neurons) on a given current, forward and backward, as snnTorch's ``Leaky`` per step,
pullback's fused per-step op, the same update in core ops, and one ``lif_sequence`` call.
"""

from __future__ import annotations

import argparse
import csv
import os
from typing import Any

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, report, same_weights, time_pair, torch_module

import numpy as np

import pullback
from pullback import optim, spanda

STEPS, BETA, SLOPE = 25, 0.95, 25.0


def _data(encoding: str, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """A batch of Fashion-MNIST-sized images (random: timing does not depend on the values)."""
    rng = np.random.default_rng(0)
    images = rng.random((batch, 784)).astype(np.float32)
    labels = rng.integers(0, 10, batch).astype(np.int64)
    if encoding == "rate":
        images = (rng.random((STEPS, batch, 784)) < images).astype(np.float32)
    return images, labels


def snntorch_steps(torch, x_np, y_np, encoding, hidden):
    import snntorch as snn
    from snntorch import functional as SF
    from snntorch import surrogate

    fc1, fc2 = torch.nn.Linear(784, hidden), torch.nn.Linear(hidden, 10)
    lif1 = snn.Leaky(beta=BETA, spike_grad=surrogate.fast_sigmoid(SLOPE))
    lif2 = snn.Leaky(beta=BETA, spike_grad=surrogate.fast_sigmoid(SLOPE))
    params = list(fc1.parameters()) + list(fc2.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    loss_fn = SF.ce_count_loss()
    x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

    def run(hoisted: bool):
        mem1, mem2 = lif1.reset_mem(), lif2.reset_mem()
        current = fc1(x) if hoisted else None
        spikes = []
        for t in range(STEPS):
            step_in = x[t] if encoding == "rate" else x
            spk1, mem1 = lif1(current if hoisted else fc1(step_in), mem1)
            spk2, mem2 = lif2(fc2(spk1), mem2)
            spikes.append(spk2)
        return torch.stack(spikes)

    def make(hoisted: bool):
        def step():
            opt.zero_grad()
            loss_fn(run(hoisted), y).backward()
            opt.step()
        return step

    return (fc1, fc2), make(False), make(True)


def pullback_steps(x_np, y_np, encoding, linears, hidden):
    sg = spanda.surrogate.fast_sigmoid(SLOPE)
    model = spanda.SpikingSequential(
        spanda.SpikingLinear(784, hidden, spanda.LIF(BETA, surrogate=sg)),
        spanda.SpikingLinear(hidden, 10, spanda.LIF(BETA, surrogate=sg)))
    same_weights(model[0].synapse, linears[0])
    same_weights(model[1].synapse, linears[1])
    opt = optim.Adam(model.parameters(), lr=1e-3)
    images, y = pullback.from_numpy(x_np), pullback.from_numpy(y_np)
    inputs = spanda.encode.direct(images, STEPS) if encoding == "direct" else images
    fc1, fc2 = model[0].synapse, model[1].synapse
    lif1, lif2 = model[0].neuron, model[1].neuron

    def sequential():
        opt.zero_grad()
        spanda.loss.spike_count_cross_entropy(model(inputs, num_steps=STEPS), y).backward()
        opt.step()

    def composite_lif(current, mem):
        """The delayed subtract reset written in core ops (what the fused op replaces)."""
        reset = (mem > 1.0).to(current.dtype)
        mem = mem * BETA + current - reset
        return spanda.functional.spike(mem, 1.0, surrogate=sg), mem

    def loop(step_fn):
        def step():
            opt.zero_grad()
            batch = y.shape[0]
            mem1, mem2 = pullback.zeros(batch, hidden), pullback.zeros(batch, 10)
            spikes = []
            for t in range(STEPS):
                spk1, mem1 = step_fn(lif1, fc1(inputs[t]), mem1)
                spk2, mem2 = step_fn(lif2, fc2(spk1), mem2)
                spikes.append(spk2)
            spanda.loss.spike_count_cross_entropy(pullback.stack(spikes), y).backward()
            opt.step()
        return step

    fused_loop = loop(lambda lif, current, mem: lif(current, mem))
    composite_loop = loop(lambda lif, current, mem: composite_lif(current, mem))
    return sequential, fused_loop, composite_loop


def neuron_only(torch, batch: int, hidden: int) -> dict[str, tuple[Any, Any]]:
    """The time loop of one LIF layer, nothing else: each variant against snnTorch's Leaky."""
    import snntorch as snn
    from snntorch import surrogate

    current = np.random.default_rng(0).uniform(0.0, 0.15, (STEPS, batch, hidden)).astype(
        np.float32)
    lif = snn.Leaky(beta=BETA, spike_grad=surrogate.fast_sigmoid(SLOPE))
    # One leaf per step for the loops (slicing one (T, B, N) leaf per step would time the
    # slices' gradients instead: pullback's engine gives each a zero-filled (T, B, N) buffer).
    t_steps = [torch.tensor(c, requires_grad=True) for c in current]
    p_steps = [pullback.tensor(c, requires_grad=True) for c in current]
    px = pullback.tensor(current, requires_grad=True)
    sg = spanda.surrogate.fast_sigmoid(SLOPE)
    ours = spanda.LIF(BETA, surrogate=sg)

    def theirs():
        mem, out = lif.reset_mem(), []
        for t in range(STEPS):
            spk, mem = lif(t_steps[t], mem)
            out.append(spk)
        torch.stack(out).sum().backward()

    def loop(step):
        def run():
            mem, out = pullback.zeros(batch, hidden), []
            for t in range(STEPS):
                spk, mem = step(p_steps[t], mem)
                out.append(spk)
            pullback.stack(out).sum().backward()
        return run

    def composite(current, mem):
        reset = (mem > 1.0).to(current.dtype)
        mem = mem * BETA + current - reset
        return spanda.functional.spike(mem, 1.0, surrogate=sg), mem

    def sequence():
        spanda.functional.lif_sequence(px, beta=BETA, surrogate=sg)[0].sum().backward()

    return {"neuron_fused_step_loop": (loop(lambda x, m: ours(x, m)), theirs),
            "neuron_composite_loop": (loop(composite), theirs),
            "neuron_sequence_op": (sequence, theirs)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--encoding", choices=("direct", "rate"), default="direct")
    parser.add_argument("--hidden", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--block", type=int, default=2, help="steps per timed block")
    parser.add_argument("--repeats", type=int, default=5, help="timed blocks per variant")
    parser.add_argument("--csv", default=None, help="append one row per variant to this CSV")
    parser.add_argument("--neuron-only", action="store_true", help="time the LIF loop alone")
    args, _ = parser.parse_known_args()
    torch = torch_module()
    if args.neuron_only:
        pairs = neuron_only(torch, args.batch, args.hidden)
        args.encoding = "current"
    else:
        pairs = training_steps(torch, args)
    rows = []
    for name, (step, reference) in pairs.items():
        ours, theirs = time_pair(step, reference, warmup=2, repeats=args.repeats,
                                 block=args.block)
        report(f"spanda_step_{name}", ours, theirs, 1.0, encoding=args.encoding, steps=STEPS,
               batch=args.batch, hidden=args.hidden, reference="snntorch_loop",
               note="pullback_ms is this variant's time, torch_ms snnTorch's loop")
        rows.append({"variant": name, "encoding": args.encoding, "hidden": args.hidden,
                     "batch": args.batch, "steps": STEPS, "threads": OPTIONS.threads,
                     "clock": OPTIONS.clock, "variant_ms": round(ours * 1e3, 2),
                     "snntorch_loop_ms": round(theirs * 1e3, 2), "ratio": round(ours / theirs, 3)})
    if args.csv:
        new = not os.path.exists(args.csv)
        with open(args.csv, "a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            if new:
                writer.writeheader()
            writer.writerows(rows)


def training_steps(torch, args) -> dict[str, tuple[Any, Any]]:
    """The full training step, each variant against snnTorch's tutorial loop."""
    x_np, y_np = _data(args.encoding, args.batch)
    linears, snn_loop, snn_hoisted = snntorch_steps(torch, x_np, y_np, args.encoding, args.hidden)
    sequential, fused_loop, composite_loop = pullback_steps(x_np, y_np, args.encoding, linears,
                                                            args.hidden)

    variants = {"pullback_sequential": sequential, "pullback_step_loop": fused_loop,
                "pullback_composite_loop": composite_loop}
    if args.encoding == "direct":
        variants["snntorch_hoisted"] = snn_hoisted
    return {name: (step, snn_loop) for name, step in variants.items()}


if __name__ == "__main__":
    main()
