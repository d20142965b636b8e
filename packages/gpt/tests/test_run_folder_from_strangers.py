"""A run folder prepared by someone else (docs/security.md): resuming never writes through a
link planted in it, ``LATEST`` never points out of its folder, special files are refused
without blocking, ``state.json`` is checked entry by entry before anything is allocated from it,
and a prune killed midway leaves no half step folder."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pullback.errors import CheckpointError
from pullback.gpt import load_checkpoint
from pullback.gpt.checkpoint import resolve

TINY_RUN = ["--steps", "2", "--warmup", "1", "--eval-iters", "1", "--batch-size", "2",
            "--quiet"]


def gpt(*args: str, limit_memory: int | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PULLBACK_DEBUG"}
    preexec = None
    if limit_memory is not None:
        import resource

        def preexec() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_memory, limit_memory))
    return subprocess.run([sys.executable, "-m", "pullback.gpt", *args], capture_output=True,
                          text=True, env=env, timeout=300, preexec_fn=preexec)


def one_line_error(result: subprocess.CompletedProcess, *words: str) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode in (1, 2), (result.returncode, result.stderr)
    (line,) = result.stderr.strip().splitlines()
    for word in words:
        assert word in line, line
    return line


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A finished two-step run (copied by each test that changes it)."""
    folder = tmp_path_factory.mktemp("run")
    corpus = folder / "corpus.txt"
    corpus.write_text("".join(f"LINE {i}: to be or not to be, that is question {i % 7}.\n"
                              for i in range(400)))
    out = folder / "run"
    done = gpt("train", "--data", str(corpus), "--out", str(out), *TINY_RUN)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture
def run(finished_run, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished_run, copy, symlinks=True)
    return copy


@pytest.fixture
def corpus(finished_run, tmp_path) -> str:
    shutil.copy(finished_run.parent / "corpus.txt", tmp_path / "corpus.txt")
    return str(tmp_path / "corpus.txt")


# -- finding 1: resuming writes through planted links ----------------------------------------

@pytest.mark.parametrize("planted", ["metrics.csv", "loss.png", "checkpoints/LATEST.tmp",
                                     "metrics.csv.tmp"])
def test_resume_never_writes_through_a_planted_link(run, corpus, tmp_path, planted):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = run / planted
    if os.path.lexists(link):
        link.unlink()
    link.symlink_to(victim)
    done = gpt("train", "--resume", "--out", str(run), "--data", corpus, "--steps", "3",
               "--quiet")
    assert victim.read_text() == "precious"
    if planted in ("metrics.csv", "loss.png"):  # refused before any work, naming the link
        one_line_error(done, planted, "symbolic link")
    else:  # a name pullback no longer writes: the run goes on, around it
        assert done.returncode == 0, done.stderr
        assert os.path.islink(link)


def test_resume_refuses_a_checkpoints_folder_that_is_a_link(run, corpus, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.move(run / "checkpoints", elsewhere)
    (run / "checkpoints").symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    done = gpt("train", "--resume", "--out", str(run), "--data", corpus, "--quiet")
    one_line_error(done, "checkpoints", "symbolic link")
    assert sorted(p.name for p in elsewhere.iterdir()) == before


def test_overwrite_removes_planted_links_not_their_targets(run, corpus, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (run / "loss.png").unlink()
    (run / "loss.png").symlink_to(victim)
    done = gpt("train", "--overwrite", "--out", str(run), "--data", corpus, *TINY_RUN)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "precious"
    assert not os.path.islink(run / "loss.png") and (run / "loss.png").stat().st_size > 1000


# -- finding 2: LATEST points anywhere -------------------------------------------------------

@pytest.mark.parametrize("marker", ["../../other/checkpoints/step-0000002", "ABSOLUTE",
                                    "..", ".", "", "step-0000002/../../x", "\0"])
def test_latest_must_name_a_step_folder_beside_it(run, tmp_path, marker):
    other = tmp_path / "other" / "checkpoints" / "step-0000002"
    shutil.copytree(run / "checkpoints" / "step-0000002", other)
    if marker == "ABSOLUTE":
        marker = str(other)
    (run / "checkpoints" / "LATEST").write_text(marker)
    with pytest.raises(CheckpointError, match="LATEST"):
        resolve(run)
    one_line_error(gpt("sample", "--checkpoint", str(run)), "LATEST")


def test_latest_naming_a_link_to_another_folder_is_refused(run, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(run / "checkpoints" / "step-0000002", other)
    (run / "checkpoints" / "step-0000009").symlink_to(other)
    (run / "checkpoints" / "LATEST").write_text("step-0000009")
    with pytest.raises(CheckpointError, match="not a folder"):
        resolve(run)


def test_latest_as_a_link_is_refused(run, tmp_path):
    outside = tmp_path / "marker"
    outside.write_text("step-0000002")
    (run / "checkpoints" / "LATEST").unlink()
    (run / "checkpoints" / "LATEST").symlink_to(outside)
    with pytest.raises(CheckpointError, match="LATEST is a symbolic link"):
        resolve(run)


# -- finding 3: special files ----------------------------------------------------------------

@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.safetensors", "state.json"])
@pytest.mark.parametrize("special", ["dev-zero", "fifo", "link-out"])
def test_special_files_in_a_checkpoint_are_refused_without_blocking(run, tmp_path, name,
                                                                    special):
    step = run / "checkpoints" / "step-0000002"
    target = step / name
    moved = tmp_path / name
    shutil.move(target, moved)
    if special == "dev-zero":
        target.symlink_to("/dev/zero")
    elif special == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to(moved)  # the real file, but outside the checkpoint's folder
    done = gpt("sample", "--checkpoint", str(run), "--max-new-tokens", "5")
    line = one_line_error(done, name)
    assert "symbolic link" in line or "FIFO" in line, line


# -- crafted state.json ----------------------------------------------------------------------

def _edit_state(run: Path, edit) -> Path:
    path = run / "checkpoints" / "step-0000002" / "state.json"
    state = json.loads(path.read_text())
    edit(state)
    path.write_text(json.dumps(state))
    return path


@pytest.mark.parametrize("edit, entry, words", [
    (lambda s: s.update(tokenizer=5), "tokenizer", "not a character tokenizer"),
    (lambda s: s["tokenizer"].update(chars=["a", "b"]), "tokenizer", "string of distinct"),
    (lambda s: s["model_config"].update(n_embd="abc"), "model_config", "n_embd must be int"),
    (lambda s: s["model_config"].update(dropout=True), "model_config", "dropout must be Real"),
    (lambda s: s["model_config"].update(n_layer=-3), "model_config", "must be positive"),
    (lambda s: s["model_config"].update(n_embd=128_000, n_head=1), "model_config",
     "describes a model of"),
    (lambda s: s["model_config"].update(n_layer=100_000), "model_config",
     "describes a model of"),
    (lambda s: s.update(model_config=[1, 2]), "model_config", "is read from a dict"),
    (lambda s: s["train_config"].update(batch_size=10**9), "train_config", "GiB"),
    (lambda s: s["train_config"].update(lr="fast"), "train_config", "lr must be Real"),
    (lambda s: s["train_config"].pop("model"), "train_config", "needs its 'model' entry"),
    (lambda s: s["train_config"]["model"].update(n_layer=7), "train_config",
     "other than 'model_config'"),
    (lambda s: s.update(step=-1), "step", "non-negative integer"),
    (lambda s: s.update(step="2"), "step", "non-negative integer"),
    (lambda s: s.update(data_rng={"bit_generator": "PCG64", "state": 5}), "data_rng",
     "not a NumPy generator state"),
    (lambda s: s.update(data_rng=[]), "data_rng", "must be a JSON object"),
    (lambda s: s.update(metrics={"val": "low"}), "metrics.val", "number or null"),
    (lambda s: s.update(elapsed_s=-1), "elapsed_s", "non-negative number"),
    (lambda s: s.update(scheduler=3), "scheduler", "must be a JSON object"),
])
def test_a_crafted_state_json_is_one_error_naming_the_entry(run, edit, entry, words):
    path = _edit_state(run, edit)
    with pytest.raises(CheckpointError) as caught:
        load_checkpoint(run)
    message = str(caught.value)
    assert str(path) in message and f"'{entry}'" in message and words in message, message


def test_a_config_of_tens_of_gib_fails_in_one_line_without_allocating(run):
    # n_embd 100,000 and 8 layers: about 1e12 parameters, 4 TB of float32, refused from the
    # header alone; under a 3 GiB address-space limit an attempt would fail with MemoryError.
    _edit_state(run, lambda s: s["model_config"].update(n_embd=100_000, n_head=1, n_layer=8))
    done = gpt("sample", "--checkpoint", str(run), limit_memory=3 * 2**30)
    one_line_error(done, "state.json", "'model_config' describes a model of")


def test_resume_refuses_a_scheduler_state_that_would_fail_at_the_next_step(run, corpus):
    _edit_state(run, lambda s: s["scheduler"].update(last_epoch="abc"))
    done = gpt("train", "--resume", "--out", str(run), "--data", corpus, "--steps", "3",
               "--quiet")
    one_line_error(done, "last_epoch")


def test_resume_without_a_training_configuration_is_one_line(run, corpus):
    _edit_state(run, lambda s: s.pop("train_config"))
    done = gpt("train", "--resume", "--out", str(run), "--data", corpus, "--quiet")
    one_line_error(done, "no training configuration")


def test_a_malformed_training_log_is_one_error_naming_it(run, corpus):
    (run / "metrics.csv").write_text("not,a,log\n1,2,3\n")
    done = gpt("train", "--resume", "--out", str(run), "--data", corpus, "--quiet")
    one_line_error(done, "metrics.csv", "not a training log")


# -- faults: a prune killed midway -----------------------------------------------------------

def test_a_prune_killed_midway_leaves_no_half_step_folder(tmp_path):
    """A child process saves three checkpoints (KEEP = 2: the third prunes the first) and is
    SIGKILLed at the first file the prune deletes."""
    out = tmp_path / "run"
    child = textwrap.dedent(f"""
        import os, signal, shutil
        import pullback as pb
        from pullback.gpt import GPT, GPTConfig, CharTokenizer, save_checkpoint
        from pullback.gpt import checkpoint

        pb.manual_seed(0)
        model = GPT(GPTConfig(vocab_size=3, block_size=4, n_layer=1, n_head=1, n_embd=4))
        tokenizer = CharTokenizer("abc")
        for step in (1, 2):
            save_checkpoint({str(out)!r}, model, tokenizer, {{"step": step}})
        real_unlink = os.unlink
        def unlink_then_die(path, *args, **kwargs):
            real_unlink(path, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        os.unlink = unlink_then_die
        save_checkpoint({str(out)!r}, model, tokenizer, {{"step": 3}})
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    root = out / "checkpoints"
    steps = sorted(p.name for p in root.iterdir() if p.name.startswith("step-"))
    assert steps and "step-0000003" in steps
    for name in steps:  # every visible step folder is whole and loads
        files = sorted(p.name for p in (root / name).iterdir())
        assert files == ["model.safetensors", "state.json"], (name, files)
        load_checkpoint(root / name)
    assert load_checkpoint(out).step == 3

    # the next save removes what the killed prune left behind
    import pullback as pb
    from pullback.gpt import GPT, GPTConfig, CharTokenizer, save_checkpoint

    pb.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=3, block_size=4, n_layer=1, n_head=1, n_embd=4))
    save_checkpoint(out, model, CharTokenizer("abc"), {"step": 4})
    assert sorted(p.name for p in root.iterdir()) == ["LATEST", "step-0000003", "step-0000004"]
