"""pytorch/examples siamese_network/main.py
(https://github.com/pytorch/examples/tree/main/siamese_network), as a reproduction written for
this corpus: the same SiameseNetwork (a ResNet-18 whose first convolution is replaced and whose
classifier is cut off with ``list(resnet.children())[:-1]``), the same pair-drawing data set,
BCELoss, Adadelta and StepLR. torchvision is not used under either framework: ``resnet18``
below builds torchvision's layer names and block structure at a smaller width, and the images
are scikit-learn's digits at 28x28 as uint8, like MNIST's. Python's ``random`` is seeded (the
original leaves it unseeded), so both frameworks see the same pairs."""

import argparse
import json
import random

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import Dataset

import corpus_data


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    """torchvision.models.ResNet's attributes (conv1, bn1, relu, maxpool, layer1-4, avgpool,
    fc), ``width`` channels in the first stage instead of 64."""

    def __init__(self, layers, width=64, num_classes=1000):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                                       nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet18(weights=None, width=8):
    return ResNet([2, 2, 2, 2], width)


class SiameseNetwork(nn.Module):
    def __init__(self, width):
        super(SiameseNetwork, self).__init__()
        self.resnet = resnet18(weights=None, width=width)
        # over-write the first conv layer to be able to read MNIST images
        self.resnet.conv1 = nn.Conv2d(1, width, kernel_size=(7, 7), stride=(2, 2),
                                      padding=(3, 3), bias=False)
        self.fc_in_features = self.resnet.fc.in_features
        # remove the last layer of resnet18 (linear layer which is before avgpool layer)
        self.resnet = torch.nn.Sequential(*(list(self.resnet.children())[:-1]))
        self.fc = nn.Sequential(nn.Linear(self.fc_in_features * 2, 256), nn.ReLU(inplace=True),
                                nn.Linear(256, 1))
        self.sigmoid = nn.Sigmoid()
        self.resnet.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.resnet(x)
        return output.view(output.size()[0], -1)

    def forward(self, input1, input2):
        output = torch.cat((self.forward_once(input1), self.forward_once(input2)), 1)
        return self.sigmoid(self.fc(output))


class APP_MATCHER(Dataset):
    def __init__(self, train, size):
        super(APP_MATCHER, self).__init__()
        x_train, y_train, x_test, y_test = corpus_data.digits(28)
        images, targets = (x_train, y_train) if train else (x_test, y_test)
        self.data = torch.from_numpy((images[:size] * 255).astype(np.uint8))  # (N, 1, 28, 28)
        self.targets = torch.from_numpy(targets[:size])
        self.group_examples()

    def group_examples(self):
        np_arr = np.array(self.targets.clone(), dtype=None, copy=None)
        self.grouped_examples = {}
        for i in range(0, 10):
            self.grouped_examples[i] = np.where((np_arr == i))[0]

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, index):
        selected_class = random.randint(0, 9)
        group = self.grouped_examples[selected_class]
        random_index_1 = random.randint(0, group.shape[0] - 1)
        image_1 = self.data[group[random_index_1]].clone().float()
        if index % 2 == 0:  # a positive pair: another image of the same class
            random_index_2 = random.randint(0, group.shape[0] - 1)
            while random_index_2 == random_index_1:
                random_index_2 = random.randint(0, group.shape[0] - 1)
            image_2 = self.data[group[random_index_2]].clone().float()
            target = torch.tensor(1, dtype=torch.float)
        else:  # a negative pair: an image of another class
            other_selected_class = random.randint(0, 9)
            while other_selected_class == selected_class:
                other_selected_class = random.randint(0, 9)
            other = self.grouped_examples[other_selected_class]
            image_2 = self.data[other[random.randint(0, other.shape[0] - 1)]].clone().float()
            target = torch.tensor(0, dtype=torch.float)
        return image_1, image_2, target


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    criterion = nn.BCELoss()
    for batch_idx, (images_1, images_2, targets) in enumerate(train_loader):
        images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(images_1), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss, correct = 0, 0
    criterion = nn.BCELoss()
    with torch.no_grad():
        for (images_1, images_2, targets) in test_loader:
            images_1, images_2, targets = images_1.to(device), images_2.to(device), targets.to(device)
            outputs = model(images_1, images_2).squeeze()
            test_loss += criterion(outputs, targets).sum().item()
            pred = torch.where(outputs > 0.5, 1, 0)
            correct += pred.eq(targets.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))
    return test_loss, correct / len(test_loader.dataset)


def main():
    parser = argparse.ArgumentParser(description='PyTorch Siamese network Example')
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--test-batch-size', type=int, default=1000)
    parser.add_argument('--epochs', type=int, default=14)
    parser.add_argument('--lr', type=float, default=1.0)
    parser.add_argument('--gamma', type=float, default=0.7)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--log-interval', type=int, default=10)
    parser.add_argument('--train-size', type=int, default=1500)
    parser.add_argument('--width', type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    random.seed(args.seed)
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() \
        else torch.device("cpu")
    train_loader = torch.utils.data.DataLoader(APP_MATCHER(True, args.train_size),
                                               batch_size=args.batch_size)
    test_loader = torch.utils.data.DataLoader(APP_MATCHER(False, 297),
                                              batch_size=args.test_batch_size)
    model = SiameseNetwork(args.width).to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test_loss, accuracy = test(model, device, test_loader)
        scheduler.step()
    print(json.dumps({"test_loss": test_loss, "test_accuracy": accuracy}))


if __name__ == '__main__':
    main()
