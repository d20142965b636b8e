"""Tokenizer, corpus lookup (the embedded copy and its overrides), split and batches."""

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
    assert data_mod.tinyshakespeare() == data_mod.Corpus("abc", str(tmp_path / "input.txt"))
    monkeypatch.setenv("PULLBACK_DATA", str(tmp_path / "input.txt"))
    assert data_mod.tinyshakespeare().source == str(tmp_path / "input.txt")


@pytest.fixture
def no_local_copy(tmp_path, monkeypatch):
    """Neither $PULLBACK_DATA nor the user cache holds a copy (the cache is an empty folder)."""
    monkeypatch.delenv("PULLBACK_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "pullback" / "tinyshakespeare" / "input.txt"


def test_the_embedded_corpus_is_the_default_and_has_the_published_checksum(no_local_copy):
    corpus = data_mod.tinyshakespeare()
    assert corpus.source == data_mod.EMBEDDED_SOURCE
    assert hashlib.sha256(corpus.text.encode("utf-8")).hexdigest() == (
        "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed")
    assert len(corpus.text) == 1_115_394 and corpus.text.startswith("First Citizen:\n")


def test_a_copy_in_the_user_cache_overrides_the_embedded_one(no_local_copy):
    no_local_copy.parent.mkdir(parents=True)
    no_local_copy.write_text("my own shakespeare")
    assert data_mod.tinyshakespeare() == data_mod.Corpus("my own shakespeare", str(no_local_copy))


def test_a_named_root_is_the_only_place_looked_at(tmp_path, no_local_copy):
    with pytest.raises(data_mod.CorpusNotFoundError, match=f"not in {tmp_path / 'empty'}"):
        data_mod.tinyshakespeare(root=tmp_path / "empty")
    (tmp_path / "tinyshakespeare").mkdir()
    (tmp_path / "tinyshakespeare" / "input.txt").write_text("nested")
    assert data_mod.tinyshakespeare(root=tmp_path).text == "nested"


def test_a_damaged_embedded_corpus_is_refused(no_local_copy, monkeypatch):
    monkeypatch.setattr(data_mod, "TINYSHAKESPEARE_SHA256", "0" * 64)
    with pytest.raises(data_mod.CorpusNotFoundError, match="expected 0{64}; reinstall"):
        data_mod.tinyshakespeare()
    monkeypatch.setattr(data_mod, "EMBEDDED_CORPUS", "missing.txt.gz")
    with pytest.raises(data_mod.CorpusNotFoundError, match="cannot be read .*reinstall"):
        data_mod.tinyshakespeare()


def test_a_file_that_is_not_utf8_is_one_error_naming_it(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(data_mod.CorpusNotFoundError, match="latin1.txt is not UTF-8 text"):
        data_mod.corpus_from_file(path)
    with pytest.raises(data_mod.CorpusNotFoundError, match="cannot read .*nothing.txt"):
        data_mod.corpus_from_file(tmp_path / "nothing.txt")
