"""A variational autoencoder on scikit-learn's digits (pixels in [0, 1]), written for PyTorch."""

import argparse
import json

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=25)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args()

torch.manual_seed(args.seed)
pixels = torch.tensor(load_digits().data / 16.0, dtype=torch.float32)
train, test = pixels[:1500], pixels[1500:]
loader = DataLoader(TensorDataset(train), batch_size=100, shuffle=True)


class VAE(nn.Module):
    def __init__(self, latent=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU())
        self.mu = nn.Linear(128, latent)
        self.logvar = nn.Linear(128, latent)
        self.decoder = nn.Sequential(nn.Linear(latent, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, x):
        h = self.encoder(x)
        mu, logvar = self.mu(h), self.logvar(h)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.decoder(z), mu, logvar


def loss_function(logits, x, mu, logvar):
    reconstruction = F.binary_cross_entropy_with_logits(logits, x, reduction="sum")
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return reconstruction + kl


model = VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
for epoch in range(args.epochs):
    model.train()
    total = 0.0
    for (xb,) in loader:
        optimizer.zero_grad()
        logits, mu, logvar = model(xb)
        loss = loss_function(logits, xb, mu, logvar)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss per image {total / len(train):.2f}")

model.eval()
with torch.no_grad():
    logits, mu, logvar = model(test)
    test_loss = loss_function(logits, test, mu, logvar).item() / len(test)
print(json.dumps({"test_loss": test_loss, "train_loss": total / len(train)}))
