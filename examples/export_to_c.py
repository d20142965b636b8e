"""Train a Fashion-MNIST classifier, export it as C99, and run the C natively and on an emulated
Cortex-M4 microcontroller.

A small CNN (two convolutions with batch norm, max pooling, two linear layers) is trained with
Adam; ``pullback.compiler.export_c`` writes it as one self-contained ``fashion_cnn.h`` /
``fashion_cnn.c`` pair (weights as static const arrays, batch norm folded into the
convolutions, activations in one static arena, no malloc, libm only). The script then

* loads the C with ctypes and classifies the test images with it (accuracy, agreement with
  eager pullback, largest difference of the logits);
* builds a standalone C program that classifies some test images and times itself;
* when ``arm-none-eabi-gcc`` and ``qemu-system-arm`` are installed (Debian:
  ``apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm``), cross-compiles
  the same program for a Cortex-M4F, runs it on QEMU's MPS2-AN386 board and reports the
  model's flash and RAM from ``arm-none-eabi-size``.

    python examples/export_to_c.py [--epochs 1] [--data DIR] [--out DIR] [--smoke]

Writes the C files, the programs and results.json to --out (default runs/export_to_c/).
Timings are whatever the machine gives (a shared machine makes them noisy).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

import pullback as pb
import pullback.compiler as pc
import pullback.nn as nn
import pullback.optim as optim

from _example import example_parser, missing_data, output_dir
from _nn_example import FASHION_MNIST_HELP, accuracy, fashion_mnist


def classifier() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 7 * 7, 64),
                         nn.ReLU(), nn.Linear(64, 10))


def train(model: nn.Module, images: pb.Tensor, labels: pb.Tensor, epochs: int,
          batch: int = 128) -> None:
    opt = optim.Adam(model.parameters(), lr=2e-3)
    rng = np.random.default_rng(0)
    model.train()
    for epoch in range(epochs):
        order = rng.permutation(images.shape[0])
        for start in range(0, len(order), batch):
            rows = pb.tensor(order[start:start + batch])
            loss = nn.functional.cross_entropy(model(images[rows]), labels[rows])
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch + 1}: last batch loss {loss.item():.3f}")


def relative_error(actual: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


def main() -> None:
    parser = example_parser(__doc__, __file__, FASHION_MNIST_HELP)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--program-images", type=int, default=100,
                        help="test images built into the standalone and Cortex-M4 programs")
    args = parser.parse_args()
    if shutil.which(os.environ.get("CC", "cc")) is None:
        missing_data("no C compiler: install gcc (or set $CC)")
    out = Path(output_dir(args.out))
    train_x, train_y = fashion_mnist(True, args.data)
    test_x, test_y = fashion_mnist(False, args.data)
    if args.smoke:
        train_x, train_y, test_x, test_y = train_x[:1024], train_y[:1024], test_x[:200], \
            test_y[:200]
        args.epochs, args.program_images = 1, 5

    pb.manual_seed(0)
    model = classifier()
    train(model, train_x, train_y, args.epochs)
    model.eval()
    eager_accuracy = accuracy(model, test_x, test_y)

    export = pc.export_c(model, test_x[:1], out, name="fashion_cnn")
    print(f"exported {export.source} ({export.kernels} kernels): weights "
          f"{export.weight_bytes} B, activation arena {export.arena_bytes} B "
          f"(one buffer per value: {export.naive_bytes} B)")

    library = export.load()
    images = test_x.numpy()
    start = time.perf_counter()
    c_logits = np.concatenate([library(images[i:i + 1])[0] for i in range(len(images))])
    c_ms = (time.perf_counter() - start) * 1e3 / len(images)
    with pb.no_grad():
        eager_logits = model(test_x).numpy()
    labels = test_y.numpy()
    results = {
        "test_images": len(images), "eager_accuracy": eager_accuracy,
        "c_accuracy": float((c_logits.argmax(1) == labels).mean()),
        "c_agreement": float((c_logits.argmax(1) == eager_logits.argmax(1)).mean()),
        "c_max_relative_error": relative_error(c_logits, eager_logits),
        "c_ctypes_ms_per_image": c_ms, "weight_bytes": export.weight_bytes,
        "arena_bytes": export.arena_bytes, "naive_arena_bytes": export.naive_bytes,
    }

    samples = [[images[i:i + 1]] for i in range(args.program_images)]
    expected = eager_logits[:args.program_images]
    native = export.run_native(samples, repeats=200)
    native_logits = np.concatenate([s[0] for s in native.outputs])
    results.update(native_max_relative_error=relative_error(native_logits, expected),
                   native_ms_per_image=native.time_ns / 1e6)

    why = pc.cortex_m4_unavailable()
    if why is None:
        m4 = export.run_cortex_m4(samples)
        on_m4 = np.concatenate([s[0] for s in m4.outputs])
        results.update(cortex_m4_max_relative_error=relative_error(on_m4, expected),
                       cortex_m4_agreement=float((on_m4.argmax(1) == expected.argmax(1)).mean()),
                       cortex_m4_model_flash_bytes=m4.model_sizes.flash,
                       cortex_m4_model_ram_bytes=m4.model_sizes.ram,
                       cortex_m4_program_flash_bytes=m4.program_sizes.flash,
                       cortex_m4_program_ram_bytes=m4.program_sizes.ram)
    else:
        results["cortex_m4"] = f"skipped: {why}"

    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"accuracy on {len(images)} test images: eager {eager_accuracy:.4f}, "
          f"exported C {results['c_accuracy']:.4f}; the C agrees with eager on "
          f"{results['c_agreement']:.2%} of them (largest logit difference "
          f"{results['c_max_relative_error']:.1e} relative)")
    print(f"per image: C through ctypes {c_ms:.3f} ms, the standalone program "
          f"{results['native_ms_per_image']:.3f} ms")
    if why is None:
        print(f"Cortex-M4 (QEMU mps2-an386): {len(samples)} images, agreement "
              f"{results['cortex_m4_agreement']:.0%}, largest difference "
              f"{results['cortex_m4_max_relative_error']:.1e}; the model takes "
              f"{results['cortex_m4_model_flash_bytes']} B of flash and "
              f"{results['cortex_m4_model_ram_bytes']} B of RAM "
              f"(the whole program with newlib's printf: {results['cortex_m4_program_flash_bytes']}"
              f" B / {results['cortex_m4_program_ram_bytes']} B)")
    else:
        print(f"Cortex-M4 not run: {why}")


if __name__ == "__main__":
    main()
