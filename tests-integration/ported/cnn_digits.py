"""A small CNN (convolutions, batch norm, max pooling) on scikit-learn's 8x8 digits, written
for PyTorch."""

import argparse
import json

import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
digits = load_digits()
images = torch.tensor(digits.images / 16.0, dtype=torch.float32).unsqueeze(1)
labels = torch.tensor(digits.target)
perm = torch.randperm(len(labels), generator=torch.Generator().manual_seed(args.seed))
train_idx, test_idx = perm[:1400], perm[1400:]
train_loader = DataLoader(TensorDataset(images[train_idx], labels[train_idx]), batch_size=32,
                          shuffle=True, drop_last=True)

model = nn.Sequential(
    nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
)
criterion = nn.CrossEntropyLoss(label_smoothing=0.05)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
for epoch in range(args.epochs):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item()
    scheduler.step()
    print(f"epoch {epoch}: loss {running / len(train_loader):.3f}, lr {scheduler.get_last_lr()[0]:.4f}")

model.eval()
with torch.no_grad():
    logits = model(images[test_idx])
    accuracy = (logits.argmax(1) == labels[test_idx]).float().mean().item()
    test_loss = nn.functional.cross_entropy(logits, labels[test_idx]).item()
print(json.dumps({"test_accuracy": accuracy, "test_loss": test_loss,
                  "train_loss": running / len(train_loader)}))
