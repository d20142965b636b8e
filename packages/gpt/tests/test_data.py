"""Tokenizer, corpus lookup and download, split and batches."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from pullback.gpt import CharDataset, CharTokenizer
from pullback.gpt import data as data_mod


def test_tokenizer_round_trip_and_errors():
    tok = CharTokenizer.from_text("hello world")
    assert tok.vocab_size == len(set("hello world"))
    assert tok.decode(tok.encode("low")) == "low"
    assert CharTokenizer.from_dict(tok.to_dict()).chars == tok.chars
    with pytest.raises(ValueError, match="'z'"):
        tok.encode("z")


def test_split_is_first_90_last_10():
    ds = CharDataset(np.arange(1000, dtype=np.uint16))
    assert len(ds.train) == 900 and ds.train[-1] == 899 and ds.val[0] == 900


def test_batches_are_shifted_windows():
    ds = CharDataset(np.arange(1000, dtype=np.uint16))
    x, y = ds.batch("train", 4, 8, np.random.default_rng(0))
    np.testing.assert_array_equal(y.numpy(), x.numpy() + 1)
    assert x.shape == (4, 8) and x.numpy().max() < 900


def test_windows_cover_the_split_once_without_overlap():
    ds = CharDataset(np.arange(1000, dtype=np.uint16))  # val holds 900..999
    x, y = ds.windows("val", 8)
    assert x.shape == y.shape == (12, 8) and x.dtype == np.int64  # (100 - 1) // 8 windows
    np.testing.assert_array_equal(x.ravel(), np.arange(900, 996))
    np.testing.assert_array_equal(y.ravel(), np.arange(901, 997))
    with pytest.raises(ValueError, match="the val split has 100 tokens"):
        ds.windows("val", 100)


def test_pullback_data_is_looked_up_first(tmp_path, monkeypatch):
    (tmp_path / "input.txt").write_text("abc")
    monkeypatch.setenv("PULLBACK_DATA", str(tmp_path))
    assert data_mod.tinyshakespeare_path(download=False) == tmp_path / "input.txt"
    monkeypatch.setenv("PULLBACK_DATA", str(tmp_path / "input.txt"))
    assert data_mod.tinyshakespeare_path(download=False) == tmp_path / "input.txt"


def test_offline_error_says_where_to_put_the_file(tmp_path, monkeypatch):
    monkeypatch.delenv("PULLBACK_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def offline(*a, **k):
        raise OSError("network is unreachable")

    monkeypatch.setattr(data_mod.urllib.request, "urlopen", offline)
    with pytest.raises(data_mod.CorpusNotFoundError, match="PULLBACK_DATA") as err:
        data_mod.tinyshakespeare_path()
    assert str(tmp_path / "pullback" / "tinyshakespeare" / "input.txt") in str(err.value)


class _FakeResponse:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def read(self) -> bytes:
        return self.body

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_download_is_checksummed(tmp_path, monkeypatch):
    monkeypatch.delenv("PULLBACK_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    body = b"not shakespeare"
    monkeypatch.setattr(data_mod.urllib.request, "urlopen", lambda *a, **k: _FakeResponse(body))
    with pytest.raises(data_mod.CorpusNotFoundError, match=hashlib.sha256(body).hexdigest()):
        data_mod.tinyshakespeare_path()
    assert not (tmp_path / "pullback" / "tinyshakespeare" / "input.txt").exists()
    monkeypatch.setattr(data_mod, "TINYSHAKESPEARE_SHA256", hashlib.sha256(body).hexdigest())
    path = data_mod.tinyshakespeare_path()
    assert path.read_bytes() == body


def test_the_real_file_has_the_published_checksum():
    from gpt_support import SHAKESPEARE

    if SHAKESPEARE is None:
        pytest.skip("TinyShakespeare is not on this machine (set PULLBACK_DATA to its folder)")
    assert hashlib.sha256(SHAKESPEARE.read_bytes()).hexdigest() == data_mod.TINYSHAKESPEARE_SHA256
