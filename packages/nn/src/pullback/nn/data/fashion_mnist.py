"""``FashionMNIST`` (and ``MNIST``, same format): 28x28 grey images in 10 classes, read from IDX
files. Nothing is downloaded: point ``root`` at the files (Debian's dataset-fashion-mnist
package installs them under /usr/share/datasets/fashion-mnist)."""

from __future__ import annotations

import os
from typing import Any, Callable, Sequence

import numpy as np

import pullback
from pullback.tensor import Tensor
from pullback.utils.data import Dataset, default_collate

from .idx import read_idx

FASHION_MNIST_ROOT = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_URL = "https://github.com/zalandoresearch/fashion-mnist (data/fashion/*.gz)"
_FILES = {
    True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def _find(root: str, stem: str) -> str | None:
    for name in (stem + ".gz", stem, stem.replace("-idx", ".idx")):
        path = os.path.join(root, name)
        if os.path.exists(path):
            return path
    return None


class MNISTFormat(Dataset):
    """A dataset of IDX image/label files (the MNIST layout).

    Items are ``(image, label)``: a float32 tensor (1, 28, 28) in [0, 1] and an int. ``data``
    (uint8 (N, 28, 28)) and ``targets`` (int64 (N,)) hold everything in memory.
    """

    classes: Sequence[str] = tuple(str(i) for i in range(10))
    name = "MNIST"
    default_root: str | None = None
    how_to_get = "download the four *-ubyte.gz files from http://yann.lecun.com/exdb/mnist/"

    def __init__(self, root: str | None = None, train: bool = True,
                 transform: Callable[[Tensor], Any] | None = None,
                 target_transform: Callable[[int], Any] | None = None) -> None:
        root = root if root is not None else self.default_root
        if root is None:
            raise FileNotFoundError(f"{self.name}: give root= (the folder with the IDX files); "
                                    f"to get them, {self.how_to_get}")
        images, labels = (_find(root, stem) for stem in _FILES[train])
        if images is None or labels is None:
            wanted = ", ".join(s + "[.gz]" for s in _FILES[train])
            raise FileNotFoundError(f"{self.name}: {wanted} not found in {root!r}; to get them, "
                                    f"{self.how_to_get}")
        image_array, label_array = read_idx(images), read_idx(labels)
        if image_array.ndim != 3 or label_array.shape != image_array.shape[:1]:
            raise ValueError(f"{self.name}: {images} holds {image_array.shape} and {labels} holds "
                             f"{label_array.shape}; expected (N, H, W) images and N labels")
        self.root, self.train = root, train
        self.transform, self.target_transform = transform, target_transform
        self.data = pullback.from_numpy(np.ascontiguousarray(image_array))
        self.targets = pullback.from_numpy(label_array.astype(np.int64))

    def __len__(self) -> int:
        return self.data.shape[0]

    def _images(self, index: Any) -> Tensor:
        pixels = self.data.array[index].astype(np.float32) / 255.0
        return pullback.from_numpy(pixels[..., None, :, :])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image, label = self._images(int(index)), int(self.targets.array[index])
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            label = self.target_transform(label)
        return image, label

    def __getitems__(self, indices: Sequence[int]) -> Any:
        if self.transform is not None or self.target_transform is not None:
            return default_collate([self[i] for i in indices])
        idx = np.asarray(indices, dtype=np.int64)
        return self._images(idx), pullback.from_numpy(self.targets.array[idx])


class FashionMNIST(MNISTFormat):
    """Zalando's Fashion-MNIST: 60,000 training and 10,000 test images of clothing."""

    classes = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")
    name = "FashionMNIST"
    default_root = FASHION_MNIST_ROOT
    how_to_get = ("apt-get install dataset-fashion-mnist (files go to "
                  f"{FASHION_MNIST_ROOT}), or download the four *-ubyte.gz files from "
                  f"{FASHION_MNIST_URL}")


class MNIST(MNISTFormat):
    """LeCun's handwritten digits (same IDX layout; give ``root``)."""
