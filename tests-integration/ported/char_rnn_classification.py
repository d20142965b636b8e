"""PyTorch's tutorial "Classifying Names with a Character-Level RNN"
(https://pytorch.org/tutorials/intermediate/char_rnn_classification_tutorial.html), as a
reproduction written for this corpus: a NamesDataset read from data/names/<language>.txt,
names as one-hot letter tensors, a CharRNN (``nn.RNN``, a Linear on the last hidden state,
LogSoftmax), ``random_split`` with a seeded Generator, and the tutorial's training loop
(mini-batches of single names whose losses are summed, clipping, SGD). The names are
corpus_data's synthetic languages, written to data/names first. Prints the last epoch's mean
loss and the test accuracy."""

import argparse
import glob
import json
import os
import random
import string
import time
import unicodedata

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset

import corpus_data

allowed_characters = string.ascii_letters + " .,;'"
n_letters = len(allowed_characters)


def unicodeToAscii(s):
    return ''.join(c for c in unicodedata.normalize('NFD', s)
                   if unicodedata.category(c) != 'Mn' and c in allowed_characters)


def letterToIndex(letter):
    return allowed_characters.find(letter)


def lineToTensor(line):
    """A <line_length x 1 x n_letters> tensor of one-hot letters."""
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][letterToIndex(letter)] = 1
    return tensor


class NamesDataset(Dataset):
    def __init__(self, data_dir):
        self.data_dir = data_dir
        self.load_time = time.localtime
        labels_set = set()
        self.data, self.data_tensors, self.labels, self.labels_tensors = [], [], [], []
        for filename in sorted(glob.glob(os.path.join(data_dir, '*.txt'))):
            label = os.path.splitext(os.path.basename(filename))[0]
            labels_set.add(label)
            for name in open(filename, encoding='utf-8').read().strip().split('\n'):
                self.data.append(name)
                self.data_tensors.append(lineToTensor(unicodeToAscii(name)))
                self.labels.append(label)
        self.labels_uniq = sorted(labels_set)
        for idx in range(len(self.labels)):
            self.labels_tensors.append(torch.tensor([self.labels_uniq.index(self.labels[idx])],
                                                    dtype=torch.long))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        return (self.labels_tensors[idx], self.data_tensors[idx], self.labels[idx],
                self.data[idx])


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        return self.softmax(output)


def label_from_output(output, output_labels):
    top_n, top_i = output.topk(1)
    label_i = top_i[0].item()
    return output_labels[label_i], label_i


def train(rnn, training_data, n_epoch=10, n_batch_size=64, report_every=50,
          learning_rate=0.2, criterion=nn.NLLLoss()):  # noqa: B008 - the tutorial's
    """Mini-batches of names, each name through the RNN on its own, the batch's loss summed."""
    current_loss = 0
    all_losses = []
    rnn.train()
    optimizer = torch.optim.SGD(rnn.parameters(), lr=learning_rate)
    start = time.time()
    print(f"training on data set with n = {len(training_data)}")
    for iter in range(1, n_epoch + 1):
        rnn.zero_grad()
        batches = list(range(len(training_data)))
        random.shuffle(batches)
        batches = np.array_split(batches, len(batches) // n_batch_size)
        for batch in batches:
            batch_loss = 0
            for i in batch:
                (label_tensor, text_tensor, label, text) = training_data[i]
                output = rnn.forward(text_tensor)
                loss = criterion(output, label_tensor)
                batch_loss += loss
            batch_loss.backward()
            nn.utils.clip_grad_norm_(rnn.parameters(), 3)
            optimizer.step()
            optimizer.zero_grad()
            current_loss += batch_loss.item() / len(batch)
        all_losses.append(current_loss / len(batches))
        if iter % report_every == 0:
            print(f"{iter} ({iter / n_epoch:.0%}): \t average batch loss = {all_losses[-1]} "
                  f"({time.time() - start:.1f}s)")
        current_loss = 0
    return all_losses


def evaluate(rnn, testing_data, classes):
    correct = 0
    rnn.eval()
    with torch.no_grad():
        for i in range(len(testing_data)):
            (label_tensor, text_tensor, label, text) = testing_data[i]
            guess, guess_i = label_from_output(rnn(text_tensor), classes)
            correct += int(guess == label)
    return correct / len(testing_data)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=27)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--lr', type=float, default=0.15)
    parser.add_argument('--per-language', type=int, default=120)
    parser.add_argument('--seed', type=int, default=2024)
    args = parser.parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    os.makedirs('data/names', exist_ok=True)
    for language, names in corpus_data.names(args.per_language).items():
        with open(f'data/names/{language}.txt', 'w', encoding='utf-8') as f:
            f.write('\n'.join(names))
    alldata = NamesDataset('data/names')
    train_set, test_set = torch.utils.data.random_split(
        alldata, [.85, .15], generator=torch.Generator().manual_seed(args.seed))
    print(f"train examples = {len(train_set)}, validation examples = {len(test_set)}")
    rnn = CharRNN(n_letters, 128, len(alldata.labels_uniq))
    print(rnn)
    all_losses = train(rnn, train_set, n_epoch=args.epochs, n_batch_size=args.batch_size,
                       learning_rate=args.lr, report_every=5)
    accuracy = evaluate(rnn, test_set, classes=alldata.labels_uniq)
    print(json.dumps({"train_loss": all_losses[-1], "test_accuracy": accuracy}))
