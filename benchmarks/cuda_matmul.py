"""pullback-cuda's tiled matmul against cuBLAS (through CuPy), float32, no tensor cores.

For n = 256 ... 8192 (square C = A @ B), times both with CUDA events around a batch of launches
(after warm-up; the median of several batches), checks the custom result against cuBLAS, and
prints one JSON line per size with GFLOP/s and the ratio; target: the custom kernel reaches at
least 50% of cuBLAS at n = 4096. The float16 variant (float32 accumulation, no tensor cores) is
measured too, for information: cuBLAS uses tensor cores there. With --out DIR the lines are also
written to DIR/matmul.jsonl and plotted to DIR/matmul.png.

Run on a machine with a GPU: python benchmarks/cuda_matmul.py [--out DIR] [--sizes 256,1024]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("CUPY_TF32", "0")  # cuBLAS in true float32, as the custom kernel

import numpy as np  # noqa: E402

import pullback.cuda  # noqa: E402
from _common import emit  # noqa: E402

SIZES = (256, 512, 1024, 2048, 4096, 8192)
TARGET_AT_4096 = 0.5


def gpu_time(cupy: Any, fn: Callable[[], Any]) -> float:
    """Median seconds per call over 5 batches of launches, each batch sized to ~50 ms."""
    for _ in range(3):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    once = max(cupy.cuda.get_elapsed_time(start, stop) / 1e3, 1e-6)
    reps = max(1, min(200, int(0.05 / once)))
    times = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3 / reps)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for matmul.jsonl and matmul.png")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = parser.parse_args()
    if not pullback.cuda.is_available():
        emit(benchmark="cuda_matmul", skipped=pullback.cuda.unavailable_reason())
        return
    import cupy

    from pullback.cuda._kernels.matmul import matmul as custom_matmul

    records = []
    for dtype in ("float32", "float16"):
        for n in (int(s) for s in args.sizes.split(",")):
            record = measure(cupy, custom_matmul, dtype, n)
            emit(**record)
            records.append(record)
            cupy.get_default_memory_pool().free_all_blocks()
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "matmul.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        plot(records, args.out / "matmul.png")


def measure(cupy: Any, custom_matmul: Callable[[Any, Any], Any], dtype: str, n: int) -> dict[str, Any]:
    """One size: GFLOP/s of both, their ratio, and the custom result's error against cuBLAS."""
    rng = cupy.random.default_rng(n)
    a = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((n, n), dtype=np.float32).astype(dtype)
    flops = 2.0 * n**3
    ours, ref = custom_matmul(a, b), cupy.matmul(a, b)
    scale = float(cupy.abs(ref.astype(np.float32)).max()) or 1.0
    max_rel_err = float(cupy.abs(ours.astype(np.float32) - ref.astype(np.float32)).max()) / scale
    t_ours = gpu_time(cupy, lambda: custom_matmul(a, b))
    t_cublas = gpu_time(cupy, lambda: cupy.matmul(a, b))
    record = dict(benchmark="cuda_matmul", dtype=dtype, n=n, custom_gflops=flops / t_ours / 1e9,
                  cublas_gflops=flops / t_cublas / 1e9, ratio=t_cublas / t_ours,
                  max_rel_err=max_rel_err,
                  device=cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
    if dtype == "float32" and n == 4096:
        record["target_ratio"] = TARGET_AT_4096
        record["meets_target"] = record["ratio"] >= TARGET_AT_4096
    return record


def plot(records: list[dict[str, Any]], path: Path) -> None:
    """GFLOP/s against n, custom and cuBLAS, one panel per dtype."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = sorted({r["dtype"] for r in records}, reverse=True)
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6 * len(dtypes), 4.5), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        rows = [r for r in records if r["dtype"] == dtype]
        ns = [r["n"] for r in rows]
        ax.plot(ns, [r["custom_gflops"] for r in rows], "o-", label="pullback tiled kernel")
        ax.plot(ns, [r["cublas_gflops"] for r in rows], "s-", label="cuBLAS (CuPy)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.set_xlabel("n (C = A @ B, n x n)")
        ax.set_ylabel("GFLOP/s")
        ax.set_title(f"{dtype} matmul on {rows[0]['device']}")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
