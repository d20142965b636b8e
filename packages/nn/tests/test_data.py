"""Data: TensorDataset, DataLoader (batching, seeded shuffling, drop_last, collate), IDX files
and the (Fashion-)MNIST datasets."""

from __future__ import annotations

import gzip
import os
import struct

import numpy as np
import pytest

import pullback
from pullback.nn.data import DataLoader, Dataset, FashionMNIST, MNIST, TensorDataset, read_idx


def test_tensor_dataset_and_loader_batches():
    x = pullback.arange(10).reshape(10, 1)
    y = pullback.arange(10) * 2
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 6
    batches = list(DataLoader(ds, batch_size=4))
    assert [b[0].shape[0] for b in batches] == [4, 4, 2]
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), y.numpy())
    assert len(DataLoader(ds, batch_size=4)) == 3
    dropped = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dropped) == 2 and [b[0].shape[0] for b in dropped] == [4, 4]


def test_shuffle_is_a_seeded_permutation():
    ds = TensorDataset(pullback.arange(20))

    def order(**kw):
        return np.concatenate([b[0].numpy() for b in DataLoader(ds, batch_size=6, shuffle=True,
                                                                 **kw)])

    first = order(generator=np.random.default_rng(1))
    assert sorted(first) == list(range(20)) and list(first) != list(range(20))
    np.testing.assert_array_equal(first, order(generator=np.random.default_rng(1)))
    pullback.manual_seed(7)
    a = order()
    pullback.manual_seed(7)
    np.testing.assert_array_equal(a, order())
    loader = DataLoader(ds, batch_size=20, shuffle=True, generator=3)
    e1, e2 = (next(iter(loader))[0].numpy() for _ in range(2))
    assert list(e1) != list(e2)  # a new order each epoch


class Pairs(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return {"x": np.full(2, i, np.float32), "label": i, "name": f"item{i}"}


def test_default_collate_of_dicts_numbers_and_strings():
    batch = next(iter(DataLoader(Pairs(), batch_size=3)))
    assert batch["x"].shape == (3, 2) and batch["label"].tolist() == [0, 1, 2]
    assert batch["name"] == ["item0", "item1", "item2"]
    custom = next(iter(DataLoader(Pairs(), batch_size=2, collate_fn=lambda items: len(items))))
    assert custom == 2


def _write_idx(path, array, compress):
    codes = {np.uint8: 0x08, np.int32: 0x0C, np.float32: 0x0D}
    header = struct.pack(">BBBB", 0, 0, codes[array.dtype.type], array.ndim)
    header += struct.pack(f">{array.ndim}I", *array.shape)
    body = array.astype(array.dtype.newbyteorder(">")).tobytes()
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(header + body)


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
def test_read_idx(tmp_path, compress, dtype):
    array = (np.arange(24).reshape(2, 3, 4) * 3).astype(dtype)
    path = str(tmp_path / ("a.idx" + (".gz" if compress else "")))
    _write_idx(path, array, compress)
    back = read_idx(path)
    assert back.dtype == np.dtype(dtype) and back.shape == (2, 3, 4)
    np.testing.assert_array_equal(back, array)


def test_read_idx_rejects_malformed_files(tmp_path):
    path = tmp_path / "bad.idx"
    path.write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(ValueError, match="bad.idx.*not an IDX file"):
        read_idx(path)
    _write_idx(str(path), np.zeros((3, 3), np.uint8), False)
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(ValueError, match="expected 9 bytes"):
        read_idx(path)


def test_mnist_format_dataset_from_small_files(tmp_path):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (7, 28, 28)).astype(np.uint8)
    labels = rng.integers(0, 10, 7).astype(np.uint8)
    _write_idx(str(tmp_path / "t10k-images-idx3-ubyte.gz"), images, True)
    _write_idx(str(tmp_path / "t10k-labels-idx1-ubyte"), labels, False)
    ds = MNIST(root=str(tmp_path), train=False)
    assert len(ds) == 7
    image, label = ds[2]
    assert image.shape == (1, 28, 28) and image.dtype == np.float32
    np.testing.assert_allclose(image.numpy()[0], images[2] / 255.0, rtol=1e-6)
    assert label == labels[2]
    x, y = next(iter(DataLoader(ds, batch_size=4)))
    assert x.shape == (4, 1, 28, 28) and y.dtype == np.int64
    np.testing.assert_array_equal(y.numpy(), labels[:4])
    flipped = MNIST(root=str(tmp_path), train=False, transform=lambda t: t * -1.0,
                    target_transform=lambda c: c + 100)
    img, lab = flipped[0]
    assert img.numpy().max() <= 0 and lab == labels[0] + 100


def test_missing_files_explain_how_to_get_them(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        FashionMNIST(root=str(tmp_path))


@pytest.mark.skipif(not os.path.exists("/usr/share/datasets/fashion-mnist"),
                    reason="Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
def test_fashion_mnist_installed_copy():
    test = FashionMNIST(train=False)
    assert len(test) == 10000 and test.data.shape == (10000, 28, 28)
    assert sorted(set(test.targets.numpy().tolist())) == list(range(10))
    assert np.bincount(test.targets.numpy()).tolist() == [1000] * 10  # balanced test split


def test_a_sampler_decides_the_order_and_length():
    ds = TensorDataset(pullback.arange(10))
    order = [7, 3, 3, 0, 9]
    loader = DataLoader(ds, batch_size=2, sampler=order)
    assert [b[0].tolist() for b in loader] == [[7, 3], [3, 0], [9]]
    assert len(loader) == 3
    assert len(DataLoader(ds, batch_size=2, sampler=order, drop_last=True)) == 2
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds, sampler=order, shuffle=True)
