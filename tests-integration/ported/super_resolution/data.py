"""super_resolution/data.py and dataset.py of pytorch/examples, reproduced over arrays: a
Dataset of (low-resolution input, high-resolution target) luminance images. The original reads
BSDS300 photographs and makes the input with PIL (crop, bicubic resize); here the images are
scikit-learn's digits at 32x32 and the input is their ``upscale_factor``-fold block mean."""

import numpy as np
import torch.utils.data as data
from torch import from_numpy

import corpus_data


class DatasetFromArrays(data.Dataset):
    def __init__(self, images, upscale_factor):
        super(DatasetFromArrays, self).__init__()
        n, c, h, w = images.shape
        f = upscale_factor
        self.targets = images
        self.inputs = images.reshape(n, c, h // f, f, w // f, f).mean(axis=(3, 5))

    def __getitem__(self, index):
        return from_numpy(self.inputs[index]), from_numpy(self.targets[index])

    def __len__(self):
        return len(self.targets)


def get_training_set(upscale_factor, size=1500):
    return DatasetFromArrays(corpus_data.digits(32)[0][:size], upscale_factor)


def get_test_set(upscale_factor):
    return DatasetFromArrays(corpus_data.digits(32)[2], upscale_factor)


def test_image(upscale_factor):
    """One low-resolution test image (super_resolve.py's input) and its original."""
    test = get_test_set(upscale_factor)
    return np.ascontiguousarray(test.inputs[0]), np.ascontiguousarray(test.targets[0])
