"""pytorch/examples mnist_rnn/main.py (https://github.com/pytorch/examples/tree/main/mnist_rnn),
as a reproduction written for this corpus: an LSTM reads the image row by row, its last
output goes through BatchNorm1d, Dropout2d (on a 2-D input: PyTorch warns and goes on) and two
Linear layers; Adadelta and StepLR. scikit-learn's digits at 28x28 stand in for MNIST
(``--train-size`` shortens an epoch)."""

import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR

import corpus_data


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]  # the last time step only
        output = self.dropout1(self.batchnorm(output))
        output = self.dropout2(F.relu(self.fc1(output)))
        return F.log_softmax(self.fc2(output), dim=1)


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(args, model, device, test_loader):
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset), 100. * correct / len(test_loader.dataset)))
    return test_loss, correct / len(test_loader.dataset)


def main():
    parser = argparse.ArgumentParser(description='PyTorch MNIST Example using RNN')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--test-batch-size', type=int, default=1000)
    parser.add_argument('--epochs', type=int, default=14)
    parser.add_argument('--lr', type=float, default=0.1)
    parser.add_argument('--gamma', type=float, default=0.7)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--log-interval', type=int, default=10)
    parser.add_argument('--train-size', type=int, default=1500)
    args = parser.parse_args()

    device = torch.device("cpu")
    torch.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = corpus_data.digits(28)

    def dataset(x, y):  # ToTensor and Normalize((0.1307,), (0.3081,))
        return torch.utils.data.TensorDataset((torch.from_numpy(x) - 0.1307) / 0.3081,
                                              torch.from_numpy(y))

    train_loader = torch.utils.data.DataLoader(
        dataset(x_train[:args.train_size], y_train[:args.train_size]),
        batch_size=args.batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(dataset(x_test, y_test),
                                              batch_size=args.test_batch_size, shuffle=True)
    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test_loss, accuracy = test(args, model, device, test_loader)
        scheduler.step()
    print(json.dumps({"test_loss": test_loss, "test_accuracy": accuracy}))


if __name__ == '__main__':
    main()
