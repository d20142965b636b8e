"""An MLP classifier on scikit-learn's digits, written for PyTorch (run under pullback by
changing only its imports: see port.py)."""

import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset, random_split

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=20)
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--workers", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
digits = load_digits()
x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
y = torch.tensor(digits.target, dtype=torch.long)
train, test = random_split(TensorDataset(x, y), [0.8, 0.2],
                           generator=torch.Generator().manual_seed(args.seed))
train_loader = DataLoader(train, batch_size=64, shuffle=True, num_workers=args.workers)
test_loader = DataLoader(test, batch_size=256)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 64)
        self.out = nn.Linear(64, 10)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = self.dropout(F.relu(self.fc1(x)))
        x = F.relu(self.fc2(x))
        return self.out(x)


model = MLP().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
for _epoch in range(args.epochs):
    model.train()
    total = 0.0
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        total += loss.item() * len(xb)
    scheduler.step()

model.eval()
correct, loss_sum = 0, 0.0
with torch.no_grad():
    for xb, yb in test_loader:
        logits = model(xb.to(device))
        loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
        correct += (logits.argmax(dim=1) == yb).sum().item()
n = len(test)
print(f"train loss {total / len(train):.4f}")
print(json.dumps({"test_accuracy": correct / n, "test_loss": loss_sum / n,
                  "train_loss": total / len(train)}))
