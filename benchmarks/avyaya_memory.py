"""Peak memory and step time of deep reversible MLPs against the same blocks run as an ordinary
network (every activation stored), at 10, 50, 100 and 500 blocks, same width and batch. The
reference in PyTorch is revlib (RevNet stacks) against the same blocks without its savings.

    python benchmarks/avyaya_memory.py --threads 1 --clock cpu --out docs/avyaya  # committed

One training step = forward, mean-square loss, backward, SGD update. Memory is the peak above
what was allocated before the step (the parameters; gradients are set to None first), traced
(pullback: tracemalloc, which counts NumPy's arrays; PyTorch: its profiler's allocation
events) and as the resident set's high-water mark (everything, both frameworks; noisier, as
the C allocator reuses pages). "activation" subtracts one gradient per parameter, which
either path allocates. The seed claimed 99.8 % saved at 500 layers. Step times are the best
of a few runs (``_nn_bench.time_pair``); ``--clock cpu`` counts the process's CPU time, which a
busy machine disturbs less than the wall clock.
"""

from __future__ import annotations

import argparse
import os

from _avyaya_bench import (  # first: --threads
    mib, pyplot, rss_peak, saved, timed, torch_traced_peak, traced_peak, write_csv,
)

import numpy as np

import pullback as pb
from pullback import optim
from pullback.avyaya import ReversibleBlock, ReversibleSequential, residual_mlp

from _common import emit
from _nn_bench import OPTIONS, time_pair

SEED_SAVED = 0.998


def pullback_steps(depth: int, width: int, batch: int):
    """{path: (reset, work)} for the reversible stack and the same blocks run ordinarily, and
    the bytes of one gradient per parameter."""
    pb.manual_seed(0)
    half = width // 2
    stack = ReversibleSequential([ReversibleBlock(residual_mlp(half, depth=depth),
                                                  residual_mlp(half, depth=depth))
                                  for _ in range(depth)])
    opt = optim.SGD(stack.parameters(), lr=1e-3)
    # The input requires grad, as revlib's needs to (and a stack inside a model would).
    x = pb.tensor(np.random.default_rng(0).standard_normal((batch, width)).astype(np.float32),
                  requires_grad=True)

    def ordinary(v):
        for block in stack:
            v = block(v)
        return v

    def reset():
        opt.zero_grad()
        x.grad = None

    def work(forward):
        def run():
            forward(x).square().mean().backward()
            opt.step()
        return run

    grad_bytes = sum(p.array.nbytes for p in stack.parameters())
    return {"reversible": (reset, work(stack)), "ordinary": (reset, work(ordinary))}, grad_bytes


def torch_steps(torch, revlib, depth: int, width: int, batch: int):
    """{path: (reset, work)} for revlib's RevNet stack with and without its memory savings."""
    torch.manual_seed(0)
    half = width // 2

    def mlp():
        return torch.nn.Sequential(torch.nn.Linear(half, half), torch.nn.ReLU(),
                                   torch.nn.Linear(half, half))

    modules = [mlp() for _ in range(2 * depth)]  # a RevNet block is the half-steps f, g
    x = torch.randn(batch, width, requires_grad=True)
    steps = {}
    for path, mode in (("reversible", revlib.MemoryModes.autograd_function),
                       ("ordinary", revlib.MemoryModes.no_savings)):
        net = revlib.ReversibleSequential(*modules, split_dim=1, memory_mode=mode)
        opt = torch.optim.SGD(net.parameters(), lr=1e-3)

        def reset(opt=opt):
            opt.zero_grad(set_to_none=True)
            x.grad = None

        def work(net=net, opt=opt):
            net(x).square().mean().backward()
            opt.step()
        steps[path] = (reset, work)
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="10,50,100,500")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", help="write memory.csv and memory.png here (docs/avyaya)")
    args, _ = parser.parse_known_args()
    depths = [int(d) for d in args.depths.split(",")]
    try:
        import torch
        import revlib
        torch.set_num_threads(OPTIONS.threads)
    except ImportError:
        torch = revlib = None
        emit(benchmark="avyaya_memory", note="torch/revlib missing: pullback only "
             "(pip install torch==2.13.0 revlib)")

    rows = []
    for depth in depths:
        frameworks = {"pullback": pullback_steps(depth, args.width, args.batch)}
        grad_bytes = frameworks["pullback"][1]
        if torch is not None:
            frameworks["pytorch+revlib"] = (torch_steps(torch, revlib, depth, args.width,
                                                        args.batch), grad_bytes)
        for framework, (steps, _) in frameworks.items():
            for step in steps.values():
                timed(step)()  # gradients, optimizer state and allocator warm
            if framework == "pullback":
                traced = {path: traced_peak(work, reset) for path, (reset, work) in steps.items()}
            else:
                traced = {path: torch_traced_peak(torch, work, reset)
                          for path, (reset, work) in steps.items()}
            rss = {path: rss_peak(work, reset) for path, (reset, work) in steps.items()}
            seconds = dict(zip(("reversible", "ordinary"),
                               time_pair(timed(steps["reversible"]), timed(steps["ordinary"]),
                                         warmup=1, repeats=args.repeat, block=1)))
            for path in ("reversible", "ordinary"):
                rows.append({
                    "depth": depth, "framework": framework, "path": path,
                    "traced_peak_mib": mib(traced[path]),
                    "traced_activation_mib": mib(traced[path], grad_bytes),
                    "rss_peak_mib": mib(rss[path]), "rss_activation_mib": mib(rss[path], grad_bytes),
                    "step_ms": round(seconds[path] * 1e3, 2)})
            record = dict(benchmark="avyaya_memory", framework=framework, depth=depth,
                          width=args.width, batch=args.batch, gradients_mib=mib(grad_bytes),
                          step_time_ratio=round(seconds["reversible"] / seconds["ordinary"], 3),
                          seed_saved=SEED_SAVED, threads=OPTIONS.threads, clock=OPTIONS.clock)
            for name, peaks in (("traced", traced), ("rss", rss)):
                if peaks["ordinary"] is not None:
                    record[f"saved_{name}"] = saved(peaks)
                    record[f"saved_{name}_activation"] = saved(peaks, grad_bytes)
            emit(**record)
    if args.out:
        write_csv(os.path.join(args.out, "memory.csv"), rows)
        plot(rows, os.path.join(args.out, "memory.png"), args.width, args.batch)


def plot(rows, path: str, width: int, batch: int) -> None:
    plt = pyplot()
    fig, (mem, time_ax) = plt.subplots(1, 2, figsize=(11, 4))
    series = [("pullback", "traced_activation_mib", "pullback, tracemalloc"),
              ("pytorch+revlib", "traced_activation_mib", "PyTorch + revlib, profiler"),
              ("pullback", "rss_activation_mib", "pullback, RSS"),
              ("pytorch+revlib", "rss_activation_mib", "PyTorch + revlib, RSS")]
    for framework, column, label in series:
        for path_name, style in (("reversible", "-o"), ("ordinary", "--s")):
            pts = [(r["depth"], r[column]) for r in rows
                   if r["framework"] == framework and r["path"] == path_name and r[column] != ""]
            if pts:
                mem.plot(*zip(*pts), style, label=f"{label}, {path_name}")
    mem.set_xscale("log")
    mem.set_yscale("log")
    mem.set_xlabel("blocks")
    mem.set_ylabel("peak of one step less its gradients (MiB)")
    mem.set_title(f"width {width}, batch {batch}, float32")
    mem.legend(fontsize=7)
    mem.grid(alpha=0.3)
    for framework in ("pullback", "pytorch+revlib"):
        by_depth = {}
        for r in rows:
            if r["framework"] == framework:
                by_depth.setdefault(r["depth"], {})[r["path"]] = r["step_ms"]
        pts = [(d, v["reversible"] / v["ordinary"]) for d, v in sorted(by_depth.items())]
        if pts:
            time_ax.plot(*zip(*pts), "-o", label=framework)
    time_ax.set_xscale("log")
    time_ax.set_xlabel("blocks")
    time_ax.set_ylabel("step time, reversible / ordinary")
    time_ax.set_title("the recompute cost")
    time_ax.axhline(1.0, color="grey", lw=0.5)
    time_ax.legend()
    time_ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
