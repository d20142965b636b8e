"""Inference of an exported model: the C of pullback.compiler.export_c (through ctypes, and as a
standalone C program timing itself), eager pullback, PyTorch eager and onnxruntime (on
pullback's own ONNX export), in one process, same weights.

Models: benchmarks/nn_mlp.py's MLP (784-256-256-10) and LeNet-5 on 1x28x28 images, at batch 1
and batch 32. The issue's target: at batch 1 the exported C beats PyTorch eager and onnxruntime;
at batch 32 the gap is reported as it falls (the C is a plain loop nest, not a tuned GEMM).

    python benchmarks/compiler_export_c.py                          # 2 threads, wall clock
    python benchmarks/compiler_export_c.py --threads 1 --clock cpu  # a busy machine
    python benchmarks/compiler_export_c.py --openmp                 # the C with -fopenmp too
    python benchmarks/compiler_export_c.py --cflags "-std=c99 -O3 -march=native"

Each JSON line has the best time per call (microseconds) of each side and the ratios
``<side>_over_c`` (above 1: the exported C through ctypes is faster). ``c_program_us`` is
the standalone program's own clock (no Python, no ctypes call), the number a device would see.
"""

from __future__ import annotations

# Imported first: it applies --threads before NumPy loads.
from _nn_bench import OPTIONS, same_weights, torch_module  # isort: skip

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

import pullback as pb
import pullback.compiler as pc
from _common import best_times, emit
from pullback import nn
from pullback.compiler._c99.build import STRICT_FLAGS


def mlp(torch=None):
    layers = (torch.nn if torch else nn)
    return layers.Sequential(layers.Linear(784, 256), layers.ReLU(), layers.Linear(256, 256),
                             layers.ReLU(), layers.Linear(256, 10))


def lenet(torch=None):
    """LeNet-5 on 28x28 (padding 2 on the first convolution)."""
    layers = (torch.nn if torch else nn)
    return layers.Sequential(layers.Conv2d(1, 6, 5, padding=2), layers.ReLU(),
                             layers.MaxPool2d(2), layers.Conv2d(6, 16, 5), layers.ReLU(),
                             layers.MaxPool2d(2), layers.Flatten(), layers.Linear(400, 120),
                             layers.ReLU(), layers.Linear(120, 84), layers.ReLU(),
                             layers.Linear(84, 10))


MODELS = {"mlp": (mlp, (784,)), "lenet": (lenet, (1, 28, 28))}


def measure(name: str, batch: int, torch, ort, folder: Path, openmp: bool, clock,
            cflags: tuple[str, ...]) -> dict:
    make, shape = MODELS[name]
    t_model = make(torch).eval()
    model = make().eval()
    same_weights(model, t_model)
    x = np.random.default_rng(0).standard_normal((batch, *shape)).astype(np.float32)
    tx, px = torch.from_numpy(x), pb.tensor(x)

    export = pc.export_c(model, px, folder, name=f"{name}_b{batch}")
    library = export.load(flags=cflags)
    variants = {"c": lambda: library(x)}
    if openmp:
        threaded = export.load(openmp=True, flags=cflags)
        variants["c_openmp"] = lambda: threaded(x)

    def eager():
        with pb.no_grad():
            return model(px)

    def torch_eager():
        with torch.no_grad():
            return t_model(tx)

    variants["pullback_eager"] = eager
    variants["torch_eager"] = torch_eager
    onnx_path = folder / f"{name}_b{batch}.onnx"
    pc.export_onnx(model, px, onnx_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = OPTIONS.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    input_name = session.get_inputs()[0].name
    variants["onnxruntime"] = lambda: session.run(None, {input_name: x})

    reference = torch_eager().numpy()
    agreement = {k: float(np.abs(np.asarray(v()[0]) - reference).max())
                 for k, v in variants.items() if k.startswith("c")}
    agreement["onnxruntime"] = float(np.abs(variants["onnxruntime"]()[0] - reference).max())
    times = best_times(*variants.values(), rounds=3, repeat=50 if batch == 1 else 20,
                       clock=clock)
    us = {k: t * 1e6 for k, t in zip(variants, times)}

    repeats = 2000 if batch == 1 else 200
    run = export.run_native([[x]], repeats=repeats, flags=cflags)
    program_ns = run.cpu_time_ns if OPTIONS.clock == "cpu" else run.time_ns

    record = {"benchmark": "compiler_export_c", "model": name, "batch": batch,
              "threads": OPTIONS.threads, "clock": OPTIONS.clock, "cflags": " ".join(cflags),
              **{f"{k}_us": round(v, 2) for k, v in us.items()},
              "c_program_us": round(program_ns / 1e3, 2),
              **{f"{k}_over_c": round(v / us["c"], 2) for k, v in us.items() if k != "c"},
              "torch_over_c_program": round(us["torch_eager"] / (program_ns / 1e3), 2),
              "onnxruntime_over_c_program": round(us["onnxruntime"] / (program_ns / 1e3), 2),
              "max_abs_diff_vs_torch": agreement,
              "arena_bytes": export.arena_bytes, "naive_bytes": export.naive_bytes,
              "weight_bytes": export.weight_bytes}
    return record


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", nargs="*", default=sorted(MODELS))
    parser.add_argument("--batches", nargs="*", type=int, default=[1, 32])
    parser.add_argument("--openmp", action="store_true", help="also time the C with -fopenmp")
    parser.add_argument("--cflags", default=" ".join(STRICT_FLAGS),
                        help="the C compiler's flags (default: the strict C99 ones, -O2)")
    args, _ = parser.parse_known_args()
    torch = torch_module()
    try:
        import onnxruntime as ort
    except ImportError:
        emit(skipped="onnxruntime is not installed (pip install onnxruntime)")
        return
    clock = time.process_time if OPTIONS.clock == "cpu" else time.perf_counter
    with tempfile.TemporaryDirectory() as folder:
        for name in args.models:
            for batch in args.batches:
                emit(**measure(name, batch, torch, ort, Path(folder), args.openmp, clock,
                               tuple(args.cflags.split())))


if __name__ == "__main__":
    main()
