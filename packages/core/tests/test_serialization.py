"""pullback.save / pullback.load: safetensors checkpoints, nested state dicts, atomic writes."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import pullback
from pullback.errors import CheckpointError


def _path(tmp_path, name="ckpt.safetensors"):
    return str(tmp_path / name)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "uint8", "bool"])
def test_tensor_round_trip_every_dtype(tmp_path, dtype):
    values = np.arange(-3, 9).reshape(3, 4) % 5
    t = pullback.tensor(values, dtype=dtype)
    pullback.save(t, _path(tmp_path))
    back = pullback.load(_path(tmp_path))
    assert isinstance(back, pullback.Tensor)
    assert back.dtype == t.dtype
    assert back.shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(back).astype(np.float64),
                                  np.asarray(t).astype(np.float64))


def test_zero_dim_and_empty_tensors_keep_their_shape(tmp_path):
    state = {"step": pullback.tensor(3.5), "empty": pullback.zeros(0, 4)}
    pullback.save(state, _path(tmp_path))
    back = pullback.load(_path(tmp_path))
    assert back["step"].shape == () and back["step"].item() == 3.5
    assert back["empty"].shape == (0, 4)


def test_bfloat16_keeps_bits(tmp_path):
    x = pullback.tensor([1.0, -2.5, 3.140625, 1e-3], dtype="bfloat16")
    pullback.save({"x": x}, _path(tmp_path))
    back = pullback.load(_path(tmp_path))["x"]
    assert back.dtype == pullback.bfloat16
    np.testing.assert_array_equal(back.array.view(np.uint16), x.array.view(np.uint16))


def test_nested_state_dict_with_json_values(tmp_path):
    w = pullback.randn(4, 3)
    state = {
        "model": {"layer.0.weight": w, "layer.0.bias": pullback.zeros(4)},
        "optim": {
            "state": {0: {"step": 7, "exp_avg": pullback.ones(4, 3)}, 1: {"step": 7}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1],
                              "name": None, "amsgrad": False}],
        },
        "epoch": 3,
        "note": "hello",
    }
    pullback.save(state, _path(tmp_path))
    back = pullback.load(_path(tmp_path))
    np.testing.assert_array_equal(back["model"]["layer.0.weight"].numpy(), w.numpy())
    assert back["optim"]["state"][0]["step"] == 7
    assert set(back["optim"]["state"]) == {0, 1}  # int keys survive
    group = back["optim"]["param_groups"][0]
    assert group["betas"] == (0.9, 0.999) and isinstance(group["betas"], tuple)
    assert group["params"] == [0, 1] and group["name"] is None and group["amsgrad"] is False
    assert back["epoch"] == 3 and back["note"] == "hello"


def test_flat_state_dict_uses_its_keys_as_tensor_names(tmp_path):
    """Other safetensors readers see the state dict's own keys."""
    from safetensors.numpy import load_file

    pullback.save({"fc.weight": pullback.ones(2, 2), "fc.bias": pullback.zeros(2)},
                  _path(tmp_path))
    raw = load_file(_path(tmp_path))
    assert set(raw) == {"fc.weight", "fc.bias"}


def test_tied_tensor_stored_once_and_loaded_as_one_object(tmp_path):
    w = pullback.randn(5, 2)
    pullback.save({"emb.weight": w, "head.weight": w}, _path(tmp_path))
    back = pullback.load(_path(tmp_path))
    assert back["emb.weight"] is back["head.weight"]


def test_requires_grad_and_device_are_recorded(tmp_path):
    p = pullback.randn(3, requires_grad=True)
    pullback.save({"p": p}, _path(tmp_path))
    back = pullback.load(_path(tmp_path), map_location="cpu")["p"]
    assert back.requires_grad and back.is_leaf and str(back.device) == "cpu"


def test_loads_foreign_safetensors_as_flat_dict(tmp_path):
    from safetensors.numpy import save_file

    save_file({"a": np.ones((2, 2), np.float32), "b": np.arange(3)}, _path(tmp_path))
    back = pullback.load(_path(tmp_path))
    assert set(back) == {"a", "b"}
    np.testing.assert_array_equal(back["b"].numpy(), np.arange(3))


def test_against_torch_safetensors(tmp_path):
    """A file written by PyTorch's safetensors binding loads with the same values."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file

    ref = {"w": torch.randn(3, 4, dtype=torch.float64), "h": torch.randn(2).to(torch.bfloat16)}
    save_file(ref, _path(tmp_path))
    back = pullback.load(_path(tmp_path))
    np.testing.assert_array_equal(back["w"].numpy(), ref["w"].numpy())
    np.testing.assert_array_equal(back["h"].array.astype(np.float32), ref["h"].float().numpy())


def test_truncated_file_is_a_checkpoint_error_naming_the_file(tmp_path):
    path = _path(tmp_path)
    pullback.save({"w": pullback.randn(100)}, path)
    data = open(path, "rb").read()
    for cut in (4, 20, len(data) - 7):
        with open(path, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(CheckpointError, match="ckpt.safetensors"):
            pullback.load(path)


def test_garbage_file_is_a_checkpoint_error(tmp_path):
    path = _path(tmp_path)
    with open(path, "wb") as f:
        f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")
    with pytest.raises(CheckpointError, match="ckpt.safetensors"):
        pullback.load(path)


def test_unsupported_object_is_refused_before_writing(tmp_path):
    path = _path(tmp_path)
    import threading

    with pytest.raises(CheckpointError, match="lock at 'bad'"):
        pullback.save({"bad": threading.Lock()}, path)
    with pytest.raises(CheckpointError, match="<lambda> at 'f'"):
        pullback.save({"f": lambda x: x}, path)
    assert not os.path.exists(path)


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    path = _path(tmp_path)
    pullback.save({"w": pullback.ones(3)}, path)

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        pullback.save({"w": pullback.zeros(3)}, path)
    monkeypatch.undo()
    # The old checkpoint is intact and no temporary file is left behind.
    np.testing.assert_array_equal(pullback.load(path)["w"].numpy(), np.ones(3))
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]


def test_file_mode_is_that_of_a_plain_open(tmp_path):
    pullback.save({"w": pullback.ones(1)}, _path(tmp_path))
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert os.stat(_path(tmp_path)).st_mode & 0o777 == os.stat(plain).st_mode & 0o777


def test_no_pickle_in_the_file(tmp_path):
    path = _path(tmp_path)
    pullback.save({"w": pullback.ones(2), "meta": {"a": [1, 2]}}, path)
    data = open(path, "rb").read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    structure = json.loads(header["__metadata__"]["pullback.structure"])
    assert structure["meta"] == {"a": [1, 2]}
    assert b"\x80\x04" not in data[:8 + n]  # no pickle protocol marker in the header


@pytest.mark.parametrize("structure", [
    {"__tuple__": 5}, {"__dict__": 7}, {"a": {"__dict__": [None]}}, {"w": {"__tensor__": None}},
    [{"__tuple__": None}], {"__dict__": [[None, 1]]}, {"__tensor__": "x", "device": 3},
    {"__dict__": [[1, 2, 3]]}, {"a": {"__tuple__": {"b": 1}}},
], ids=json.dumps)
def test_malformed_pullback_metadata_is_a_checkpoint_error_naming_the_file(tmp_path, structure):
    # The header is valid JSON, the structure is not what save() writes (hand-made, damaged).
    from safetensors.numpy import save_file

    path = _path(tmp_path)
    save_file({"x": np.ones(2, np.float32)}, path,
              metadata={"pullback.format": "1", "pullback.structure": json.dumps(structure)})
    with pytest.raises(CheckpointError, match=r"load\(.*ckpt\.safetensors.*\).*malformed"):
        pullback.load(path)


def test_deeply_nested_metadata_is_a_checkpoint_error(tmp_path):
    from safetensors.numpy import save_file

    path = _path(tmp_path)
    save_file({"x": np.ones(2, np.float32)}, path,
              metadata={"pullback.format": "1", "pullback.structure": "[" * 100_000})
    with pytest.raises(CheckpointError, match="ckpt.safetensors"):
        pullback.load(path)


def test_a_killed_save_leaves_nothing_behind_after_the_next_save(tmp_path):
    # A child process is killed (SIGKILL: no cleanup runs) while its temporary file is written.
    import signal
    import subprocess
    import sys
    import textwrap

    if not hasattr(signal, "SIGKILL"):
        pytest.skip("needs SIGKILL")
    path = _path(tmp_path)
    child = textwrap.dedent(f"""
        import os, signal, pullback
        os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
        pullback.save({{"w": pullback.ones(3)}}, {path!r})
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=120)
    assert done.returncode == -signal.SIGKILL
    left = [n for n in os.listdir(tmp_path) if n.startswith(".tmp-")]
    assert len(left) == 1 and not os.path.exists(path)

    pullback.save({"w": pullback.zeros(3)}, path)
    assert os.listdir(tmp_path) == ["ckpt.safetensors"]
    np.testing.assert_array_equal(np.asarray(pullback.load(path)["w"]), np.zeros(3))


def test_a_live_writers_temporary_file_is_kept(tmp_path):
    # Another process (here: this one's parent, alive) may be writing the same target.
    from pullback import _files

    path = _path(tmp_path)
    live = tmp_path / (_files.partial_prefix("ckpt.safetensors")
                       + f"{os.getppid()}.abc.safetensors")
    live.write_bytes(b"partial")
    other_target = tmp_path / ".tmp-other.safetensors.host.1.abc.safetensors"
    other_target.write_bytes(b"partial")
    pullback.save(pullback.ones(2), path)
    assert live.exists() and other_target.exists()
