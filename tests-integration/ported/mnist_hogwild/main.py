"""pytorch/examples mnist_hogwild/main.py
(https://github.com/pytorch/examples/tree/main/mnist_hogwild), as a reproduction written for
this corpus: Hogwild! training, ``model.share_memory()`` and worker processes started with
``mp.set_start_method('spawn')`` that update the parent's model, which the parent then tests.
scikit-learn's digits at 28x28 stand in for MNIST (``--train-size`` shortens an epoch)."""

import argparse
import json

import torch
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

import corpus_data
from train import test, train

parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
parser.add_argument('--batch-size', type=int, default=64)
parser.add_argument('--epochs', type=int, default=10)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--momentum', type=float, default=0.5)
parser.add_argument('--seed', type=int, default=1)
parser.add_argument('--log-interval', type=int, default=10)
parser.add_argument('--num-processes', type=int, default=2)
parser.add_argument('--train-size', type=int, default=1500)
parser.add_argument('--start-method', default='spawn')


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        return F.log_softmax(self.fc2(x), dim=1)


if __name__ == '__main__':
    args = parser.parse_args()
    device = torch.device("cpu")
    x_train, y_train, x_test, y_test = corpus_data.digits(28)

    def dataset(x, y):  # ToTensor and Normalize((0.1307,), (0.3081,))
        return torch.utils.data.TensorDataset((torch.from_numpy(x) - 0.1307) / 0.3081,
                                              torch.from_numpy(y))

    dataset1 = dataset(x_train[:args.train_size], y_train[:args.train_size])
    dataset2 = dataset(x_test, y_test)
    kwargs = {'batch_size': args.batch_size, 'shuffle': True}

    torch.manual_seed(args.seed)
    mp.set_start_method(args.start_method, force=True)
    model = Net().to(device)
    model.share_memory()  # gradients are allocated lazily, so they are not shared here
    processes = []
    for rank in range(args.num_processes):
        p = mp.Process(target=train, args=(rank, args, model, device, dataset1, kwargs))
        p.start()
        processes.append(p)
    for p in processes:
        p.join()
    assert all(p.exitcode == 0 for p in processes), [p.exitcode for p in processes]
    test_loss, accuracy = test(args, model, device, dataset2, kwargs)
    print(json.dumps({"test_loss": test_loss, "test_accuracy": accuracy}))
