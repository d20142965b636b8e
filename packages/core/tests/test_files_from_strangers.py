"""Checkpoint files and folders prepared by someone else (docs/security.md): ``pullback.load``
reads regular files only and checks the header against the file's size before reading;
``pullback.save`` never writes through a link planted where its file goes."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import pullback
from pullback import _files
from pullback.errors import CheckpointError, UnsafePathError


def _safetensors(header: object, data: bytes = b"") -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def _write(path, content: bytes):
    path.write_bytes(content)
    return path


def test_a_symlink_to_dev_zero_is_refused_before_reading(tmp_path):
    link = tmp_path / "model.safetensors"
    link.symlink_to("/dev/zero")
    with pytest.raises(CheckpointError, match=r"model.safetensors.* is a character device, not "
                                              r"a regular file"):
        pullback.load(link)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "model.safetensors"
    os.mkfifo(fifo)
    # In a child process: a load that waited on the FIFO would hang there, not here.
    code = ("import pullback\n"
            "from pullback.errors import CheckpointError\n"
            "try:\n"
            f"    pullback.load({str(fifo)!r})\n"
            "except CheckpointError as exc:\n"
            "    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "is a FIFO (named pipe), not a regular file" in done.stdout


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="is a folder, not a regular file"):
        pullback.load(tmp_path)


def test_a_header_nested_100000_deep_is_one_checkpoint_error(tmp_path):
    path = _write(tmp_path / "deep.safetensors", _safetensors(b"[" * 100_000 + b"]" * 100_000))
    with pytest.raises(CheckpointError, match="deep.safetensors.*malformed safetensors header"):
        pullback.load(path)
    nested = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
    path = _write(tmp_path / "deep2.safetensors", _safetensors(nested))
    with pytest.raises(CheckpointError, match="deep2.safetensors"):
        pullback.load(path)


@pytest.mark.parametrize("entry, words", [
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, 400]}, "ends at byte 400"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}, "malformed data_offsets"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, "4"]}, "malformed data_offsets"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [-4, 4]}, "malformed data_offsets"),
    ({"dtype": "F32", "shape": [1], "data_offsets": [0, 2]}, "describes 2 bytes"),
    ({"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 4]}, "not a valid"),
    ({"dtype": "F32", "shape": [2**62], "data_offsets": [0, 4]}, "not a valid"),
    ({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}, "not a valid"),
    ({"dtype": "F32", "shape": "x", "data_offsets": [0, 4]}, "not a valid"),
    ({"dtype": "Q99", "shape": [1], "data_offsets": [0, 4]}, "not a valid"),
    ("x", "malformed data_offsets"),
])
def test_headers_that_lie_are_one_checkpoint_error_naming_the_file(tmp_path, entry, words):
    path = _write(tmp_path / "lies.safetensors", _safetensors({"w": entry}, b"\0" * 4))
    with pytest.raises(CheckpointError, match=f"lies.safetensors.*{words}"):
        pullback.load(path)


def test_a_header_longer_than_the_file_is_refused_before_reading(tmp_path):
    path = _write(tmp_path / "short.safetensors", struct.pack("<Q", 2**60) + b"{}")
    with pytest.raises(CheckpointError, match="header of 1152921504606846976 bytes, file of 10"):
        pullback.load(path)


def test_a_file_object_is_checked_the_same_way(tmp_path):
    import io

    data = io.BytesIO(_safetensors({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 8]}},
                                   b"\0" * 4))
    with pytest.raises(CheckpointError, match="ends at byte 8"):
        pullback.load(data)


def test_a_valid_file_still_loads(tmp_path):
    path = tmp_path / "ok.safetensors"
    pullback.save({"w": pullback.arange(6.0).reshape(2, 3), "n": 3}, path)
    loaded = pullback.load(path)
    np.testing.assert_array_equal(loaded["w"].numpy(), np.arange(6.0).reshape(2, 3))
    assert loaded["n"] == 3


@pytest.mark.parametrize("plant", ["symlink", "dangling symlink", "fifo", "folder"])
def test_save_never_writes_through_what_was_planted_at_its_target(tmp_path, plant):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = tmp_path / "run" / "model.safetensors"
    target.parent.mkdir()
    if plant == "symlink":
        target.symlink_to(victim)
    elif plant == "dangling symlink":
        target.symlink_to(tmp_path / "created-by-the-write")
    elif plant == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises(UnsafePathError, match="refusing to replace .*model.safetensors"):
        pullback.save({"w": pullback.ones(2)}, target)
    assert victim.read_text() == "precious"
    assert not (tmp_path / "created-by-the-write").exists()
    # nothing but what was planted is left in the folder (no temporary file)
    assert os.listdir(target.parent) == ["model.safetensors"]


def test_unsafe_path_error_is_an_os_error_for_command_line_handlers():
    assert issubclass(UnsafePathError, OSError)


def test_make_folder_refuses_a_planted_link_to_a_folder(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "checkpoints").symlink_to(elsewhere)
    with pytest.raises(UnsafePathError, match="checkpoints as a folder: it is a symbolic link"):
        _files.make_folder(tmp_path / "checkpoints")
    assert _files.make_folder(tmp_path / "new") == tmp_path / "new"
    assert _files.make_folder(tmp_path / "new").is_dir()  # an existing real folder is fine


def test_remove_entry_removes_a_link_not_its_target(tmp_path):
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep").write_text("x")
    (tmp_path / "link").symlink_to(target)
    _files.remove_entry(tmp_path / "link")
    assert (target / "keep").exists() and not os.path.lexists(tmp_path / "link")


def test_open_append_refuses_a_link(tmp_path):
    victim = tmp_path / "victim.csv"
    victim.write_text("precious")
    (tmp_path / "metrics.csv").symlink_to(victim)
    with pytest.raises(OSError):
        _files.open_append(tmp_path / "metrics.csv")
    assert victim.read_text() == "precious"


def test_read_regular_refuses_a_file_larger_than_its_limit(tmp_path):
    path = tmp_path / "state.json"
    path.write_text("x" * 100)
    with pytest.raises(CheckpointError, match="holds 100 bytes, more than the 10"):
        _files.read_regular(path, CheckpointError, "state", limit=10)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    with pytest.raises(CheckpointError, match="is a symbolic link"):
        _files.read_regular(link, CheckpointError, "state", limit=1000, follow_links=False)
    assert _files.read_regular(link, CheckpointError, "state", limit=1000) == b"x" * 100


def test_debug_writers_never_write_through_a_planted_link(tmp_path):
    from pullback.debug import profile, to_dot

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    x = pullback.ones(2, requires_grad=True)
    y = (x * 2).sum()
    (tmp_path / "graph.dot").symlink_to(victim)
    with pytest.raises(UnsafePathError, match="graph.dot"):
        to_dot(y, path=tmp_path / "graph.dot")
    with profile() as prof:
        (x * 3).sum()
    (tmp_path / "trace.json").symlink_to(victim)
    with pytest.raises(UnsafePathError, match="trace.json"):
        prof.export_chrome_trace(tmp_path / "trace.json")
    assert victim.read_text() == "precious"
    to_dot(y, path=tmp_path / "fresh.dot")
    assert (tmp_path / "fresh.dot").read_text().startswith("digraph")
