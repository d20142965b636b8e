"""LoRA fine-tuning: adapt a pretrained Fashion-MNIST MLP to a shifted task (inverted images)
by training rank-r adapters only.

    python examples/lora_finetune.py [--pretrain-epochs 3] [--finetune-epochs 2] [--rank 8]
        [--data DIR] [--out DIR] [--smoke]

1. Pretrain an MLP on Fashion-MNIST (all weights trainable).
2. Shift the task: every image is inverted (x -> 1 - x in pixel space). The pretrained model
   does badly on it.
3. Inject LoRA adapters into the linear layers; only the adapters train. Report the trainable
   fraction and the accuracy on the shifted test set before and after, then merge the adapters
   and check the merged model gives the same accuracy. The adapters alone are saved with
   pullback.save (a few KB).

Writes metrics.csv, curves.png and adapters.safetensors to --out (default runs/lora_finetune/).
"""

from __future__ import annotations

import json
import os
import time

from tqdm import tqdm

import pullback as pb
from pullback import nn, optim
from pullback.nn.data import DataLoader, TensorDataset

from _example import example_parser, output_dir
from _nn_example import FASHION_MNIST_HELP, accuracy, fashion_mnist, plot, write_csv

PIXEL_MEAN, PIXEL_STD = 0.2860, 0.3530  # the standardization fashion_mnist() applies


def invert(images: pb.Tensor) -> pb.Tensor:
    """The shifted task: 1 - x in pixel space, standardized like the original images."""
    pixels = images * PIXEL_STD + PIXEL_MEAN
    return ((1.0 - pixels) - PIXEL_MEAN) / PIXEL_STD


def make_model() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def train(model: nn.Module, loader: DataLoader, optimizer: optim.Optimizer, epochs: int,
          label: str, log: list[dict], evaluate, steps_per_epoch: int | None = None) -> None:
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, epochs + 1):
        total, batches = 0.0, 0
        steps = min(len(loader), steps_per_epoch or len(loader))
        for images, labels in tqdm(loader, total=steps, desc=f"{label} epoch {epoch}", leave=False):
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
            if batches == steps:
                break
        log.append({"phase": label, "epoch": epoch, "train_loss": total / batches, **evaluate()})
        print(json.dumps(log[-1]), flush=True)


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = example_parser(__doc__, __file__, data_help=FASHION_MNIST_HELP)
    parser.add_argument("--pretrain-epochs", type=int, default=3)
    parser.add_argument("--finetune-epochs", type=int, default=2)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--alpha", type=float, default=16.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    # --smoke: one short epoch of each phase, scored on the first 1,000 test images
    steps_per_epoch = 30 if args.smoke else None
    if args.smoke:
        args.pretrain_epochs, args.finetune_epochs = 1, 1
    out = output_dir(args.out)
    pb.manual_seed(args.seed)
    start = time.perf_counter()

    train_x, train_y = fashion_mnist(train=True, root=args.data)
    test_x, test_y = fashion_mnist(train=False, root=args.data)
    if args.smoke:
        test_x, test_y = test_x[:1000], test_y[:1000]
    shifted_train, shifted_test = invert(train_x), invert(test_x)
    model = make_model()

    def evaluate() -> dict[str, float]:
        return {"original_test_accuracy": accuracy(model, test_x, test_y),
                "shifted_test_accuracy": accuracy(model, shifted_test, test_y)}

    log: list[dict] = []
    original = DataLoader(TensorDataset(train_x, train_y), batch_size=128, shuffle=True)
    train(model, original, optim.Adam(model.parameters(), lr=1e-3), args.pretrain_epochs,
          "pretrain", log, evaluate, steps_per_epoch)
    before = evaluate()

    nn.inject_lora(model, target_modules=["1", "3", "5"], r=args.rank, alpha=args.alpha)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    print(f"LoRA r={args.rank}: {trainable} of {total} parameters trainable "
          f"({trainable / total:.2%})")
    shifted = DataLoader(TensorDataset(shifted_train, train_y), batch_size=128, shuffle=True)
    adapters = [p for p in model.parameters() if p.requires_grad]
    train(model, shifted, optim.Adam(adapters, lr=3e-3), args.finetune_epochs, "lora", log,
          evaluate, steps_per_epoch)
    after = evaluate()

    adapter_path = os.path.join(out, "adapters.safetensors")
    pb.save(nn.lora_state_dict(model), adapter_path)
    nn.merge_lora(model)
    merged = accuracy(model, shifted_test, test_y)

    write_csv(os.path.join(out, "metrics.csv"), log)
    steps = list(range(1, len(log) + 1))
    plot(os.path.join(out, "curves.png"), steps,
         {"original test accuracy": [r["original_test_accuracy"] for r in log],
          "shifted (inverted) test accuracy": [r["shifted_test_accuracy"] for r in log]},
         f"epoch (pretrain {args.pretrain_epochs}, then LoRA {args.finetune_epochs})",
         "LoRA fine-tuning on inverted Fashion-MNIST (pullback)")
    summary = {"rank": args.rank, "trainable_parameters": trainable, "total_parameters": total,
               "trainable_fraction": trainable / total,
               "shifted_accuracy_before": before["shifted_test_accuracy"],
               "shifted_accuracy_after": after["shifted_test_accuracy"],
               "shifted_accuracy_merged": merged,
               "original_accuracy_before": before["original_test_accuracy"],
               "original_accuracy_after": after["original_test_accuracy"],
               "adapter_file_bytes": os.path.getsize(adapter_path),
               "seconds": time.perf_counter() - start, "out": out}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
