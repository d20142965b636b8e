"""Batch-1 inference of imported ONNX models: pullback eager, pullback compiled
(``pullback.compiler.compile`` of the imported Module: the Python program, eager's numbers bit
for bit; and with ``freeze=True``: one C function with the weights frozen in) and onnxruntime,
one thread each, in one process. Issue 42's target: compiled within 1.5x of onnxruntime, never
slower than eager.

The models are an MLP (784-256-10) and a small CNN (two conv-relu-pool blocks and a linear
layer on 1x28x28), exported by ``torch.onnx.export`` with random weights. The three runners
alternate in rounds and each figure is the median of the rounds' best times, so a slow spell
of a shared machine hits them alike. Prints one JSON line per model with the times in
microseconds and the ratios to onnxruntime.

    python benchmarks/compiler_onnx_import.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from _common import best_time  # noqa: E402


def _models(torch):
    nn = torch.nn
    return {
        "mlp": (nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)), (1, 784)),
        "cnn": (nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(16 * 7 * 7, 10)), (1, 1, 28, 28)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    import torch

    import pullback as pb

    pb.set_num_threads(1)
    torch.manual_seed(0)
    for name, (model, shape) in _models(torch).items():
        print(json.dumps(_measure(name, model, shape, args)))


def _measure(name, model, shape, args) -> dict:
    import onnxruntime as ort
    import torch

    import pullback as pb
    import pullback.compiler as pc

    model.eval()
    buffer = io.BytesIO()
    torch.onnx.export(model, (torch.randn(*shape),), buffer, dynamo=False, opset_version=17,
                      input_names=["x"])
    data = buffer.getvalue()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    net = pc.import_onnx(data).eval()
    compiled = pc.compile(net)
    frozen = pc.compile(net, freeze=True)
    xt = pb.tensor(x)

    def eager():
        with pb.no_grad():
            return net(xt)

    def fast():
        with pb.no_grad():
            return compiled(xt)

    def freezing():
        with pb.no_grad():
            return frozen(xt)

    def onnxruntime():
        return session.run(None, {"x": x})

    reference = onnxruntime()[0]
    for fn in (eager, fast, freezing):
        np.testing.assert_allclose(fn().numpy(), reference, rtol=1e-4, atol=1e-5)
    assert frozen.frozen.builds == 1, frozen.trace_log
    runners = (("eager", eager), ("compiled", fast), ("frozen", freezing),
               ("onnxruntime", onnxruntime))
    times: dict[str, list[float]] = {key: [] for key, _ in runners}
    for _ in range(args.rounds):
        for key, fn in runners:
            times[key].append(best_time(fn, repeat=args.repeat, warmup=5))
    median = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    spread = {k: round((max(v) - min(v)) / min(v), 3) for k, v in times.items()}
    return {
        "benchmark": "onnx_import_batch1", "model": name, "threads": 1,
        "eager_us": round(median["eager"], 1), "compiled_us": round(median["compiled"], 1),
        "onnxruntime_us": round(median["onnxruntime"], 1),
        "eager_vs_onnxruntime": round(median["eager"] / median["onnxruntime"], 2),
        "compiled_vs_onnxruntime": round(median["compiled"] / median["onnxruntime"], 2),
        "compiled_vs_eager": round(median["compiled"] / median["eager"], 2),
        "frozen_us": round(median["frozen"], 1),
        "frozen_vs_onnxruntime": round(median["frozen"] / median["onnxruntime"], 2),
        "frozen_vs_eager": round(median["frozen"] / median["eager"], 2),
        "target_vs_onnxruntime": 1.5,
        "frozen_meets_target": median["frozen"] <= min(1.5 * median["onnxruntime"],
                                                       median["eager"]),
        "rounds": args.rounds, "relative_spread_of_rounds": spread}


if __name__ == "__main__":
    main()
