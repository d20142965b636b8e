"""pytorch/examples super_resolution/main.py
(https://github.com/pytorch/examples/tree/main/super_resolution), as a reproduction written for
this corpus: the sub-pixel network trained with MSE and Adam, PSNR on the test set, and a whole
model saved each epoch with ``torch.save(model, path)`` (super_resolve.py loads it). The data
are in data.py; ``--train-size`` shortens an epoch."""

import argparse
import json
from math import log10

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader

from data import get_test_set, get_training_set
from model import Net

parser = argparse.ArgumentParser(description='PyTorch Super Res Example')
parser.add_argument('--upscale_factor', type=int, default=2)
parser.add_argument('--batchSize', type=int, default=64)
parser.add_argument('--testBatchSize', type=int, default=10)
parser.add_argument('--nEpochs', type=int, default=2)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--threads', type=int, default=0)
parser.add_argument('--seed', type=int, default=123)
parser.add_argument('--train-size', type=int, default=1500)
opt = parser.parse_args()
print(opt)

torch.manual_seed(opt.seed)
device = torch.device("cpu")
train_set = get_training_set(opt.upscale_factor, opt.train_size)
test_set = get_test_set(opt.upscale_factor)
training_data_loader = DataLoader(dataset=train_set, num_workers=opt.threads,
                                  batch_size=opt.batchSize, shuffle=True)
testing_data_loader = DataLoader(dataset=test_set, num_workers=opt.threads,
                                 batch_size=opt.testBatchSize, shuffle=False)
model = Net(upscale_factor=opt.upscale_factor).to(device)
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=opt.lr)


def train(epoch):
    epoch_loss = 0
    for iteration, batch in enumerate(training_data_loader, 1):
        input, target = batch[0].to(device), batch[1].to(device)
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        epoch_loss += loss.item()
        loss.backward()
        optimizer.step()
        print("===> Epoch[{}]({}/{}): Loss: {:.4f}".format(
            epoch, iteration, len(training_data_loader), loss.item()))
    print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(
        epoch, epoch_loss / len(training_data_loader)))
    return epoch_loss / len(training_data_loader)


def test():
    avg_psnr = 0
    with torch.no_grad():
        for batch in testing_data_loader:
            input, target = batch[0].to(device), batch[1].to(device)
            mse = criterion(model(input), target)
            avg_psnr += 10 * log10(1 / mse.item())
    print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
    return avg_psnr / len(testing_data_loader)


def checkpoint(epoch):
    model_out_path = "model_epoch_{}.pth".format(epoch)
    torch.save(model, model_out_path)
    print("Checkpoint saved to {}".format(model_out_path))


for epoch in range(1, opt.nEpochs + 1):
    train_loss = train(epoch)
    psnr = test()
    checkpoint(epoch)
print(json.dumps({"train_loss": train_loss, "test_psnr": psnr}))
