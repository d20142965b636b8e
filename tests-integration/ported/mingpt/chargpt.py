"""minGPT's projects/chargpt/chargpt.py (https://github.com/karpathy/minGPT), as a reproduction
written for this corpus: a character-level GPT trained by mingpt's Trainer, with the original's
callback (loss every 10 iterations; every 500, a sample and a saved state dict). The text is
corpus_data's, written to input.txt; ``--system.sample_chars`` shortens the samples. Prints the
mean training loss of the last iterations."""

import json
import os
import sys

import torch
from torch.utils.data import Dataset

import corpus_data
from mingpt.model import GPT
from mingpt.trainer import Trainer
from mingpt.utils import CfgNode as CN
from mingpt.utils import set_seed, setup_logging


def get_config():
    C = CN()
    C.system = CN()
    C.system.seed = 3407
    C.system.work_dir = './out/chargpt'
    C.system.sample_chars = 500
    C.data = CharDataset.get_default_config()
    C.model = GPT.get_default_config()
    C.model.model_type = 'gpt-mini'
    C.trainer = Trainer.get_default_config()
    C.trainer.learning_rate = 5e-4
    return C


class CharDataset(Dataset):
    """Emits batches of characters."""

    @staticmethod
    def get_default_config():
        C = CN()
        C.block_size = 128
        return C

    def __init__(self, config, data):
        self.config = config
        chars = sorted(list(set(data)))
        data_size, vocab_size = len(data), len(chars)
        print('data has %d characters, %d unique.' % (data_size, vocab_size))
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}
        self.vocab_size = vocab_size
        self.data = data

    def get_vocab_size(self):
        return self.vocab_size

    def get_block_size(self):
        return self.config.block_size

    def __len__(self):
        return len(self.data) - self.config.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx:idx + self.config.block_size + 1]
        dix = [self.stoi[s] for s in chunk]
        x = torch.tensor(dix[:-1], dtype=torch.long)
        y = torch.tensor(dix[1:], dtype=torch.long)
        return x, y


if __name__ == '__main__':
    config = get_config()
    config.merge_from_args(sys.argv[1:])
    print(config)
    setup_logging(config)
    set_seed(config.system.seed)
    if not os.path.exists('input.txt'):
        with open('input.txt', 'w') as f:
            f.write(corpus_data.text())
    text = open('input.txt', 'r').read()
    train_dataset = CharDataset(config.data, text)
    config.model.vocab_size = train_dataset.get_vocab_size()
    config.model.block_size = train_dataset.get_block_size()
    model = GPT(config.model)
    trainer = Trainer(config.trainer, model, train_dataset)
    losses = []

    def batch_end_callback(trainer):
        losses.append(trainer.loss.item())
        if trainer.iter_num % 10 == 0:
            print(f"iter_dt {trainer.iter_dt * 1000:.2f}ms; iter {trainer.iter_num}: "
                  f"train loss {trainer.loss.item():.5f}")
        if trainer.iter_num % 500 == 0:
            model.eval()
            with torch.no_grad():
                context = "The data"
                x = torch.tensor([train_dataset.stoi[s] for s in context],
                                 dtype=torch.long)[None, ...].to(trainer.device)
                y = model.generate(x, config.system.sample_chars, temperature=1.0,
                                   do_sample=True, top_k=10)[0]
                print(''.join([train_dataset.itos[int(i)] for i in y]))
            print("saving model")
            torch.save(model.state_dict(), os.path.join(config.system.work_dir, "model.pt"))
            model.train()

    trainer.set_callback('on_batch_end', batch_end_callback)
    trainer.run()
    last = losses[-max(1, len(losses) // 5):]
    print(json.dumps({"train_loss": sum(last) / len(last)}))
