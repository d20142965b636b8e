"""Training: checkpoints, Ctrl-C, exact resume in a new process, logs and plots, the CLI."""

from __future__ import annotations

import csv
import gc
import subprocess
import sys
import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.gpt import load_checkpoint
from pullback.gpt.cli import main
from pullback.gpt.train import train

from gpt_support import tiny_train_config


def _losses(out):
    with (out / "metrics.csv").open() as f:
        return {int(r["step"]): r["loss"] for r in csv.DictReader(f) if r["loss"]}


def _weights(out):
    return load_checkpoint(out).model_state


def _interrupt_at(step_to_stop):
    def on_step(step, loss):
        if step == step_to_stop:
            raise KeyboardInterrupt

    return on_step


def test_resume_in_a_new_process_is_bit_identical(tmp_path, corpus):
    text = corpus.read_text()
    cfg = tiny_train_config(steps=8)  # dropout on: the device RNG must be restored too
    straight = train(cfg, text, tmp_path / "straight", quiet=True)
    assert straight.steps == 8 and not straight.interrupted

    first = train(cfg, text, tmp_path / "resumed", quiet=True, on_step=_interrupt_at(4))
    assert first.interrupted and first.steps == 4
    assert load_checkpoint(tmp_path / "resumed").step == 4
    subprocess.run(
        [sys.executable, "-m", "pullback.gpt", "train", "--resume", "--quiet",
         "--out", str(tmp_path / "resumed"), "--data", str(corpus)],
        check=True, capture_output=True, text=True,
    )
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "resumed")
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name].numpy(), b[name].numpy(), err_msg=name)
    assert _losses(tmp_path / "straight") == _losses(tmp_path / "resumed")


def _log_rows(out):
    with (out / "metrics.csv").open() as f:
        return list(csv.DictReader(f))


def _rows_without_timing(out):
    return [{k: v for k, v in r.items() if k not in ("tokens_per_s", "elapsed_s")}
            for r in _log_rows(out)]


class _Killed(Exception):
    """Stands for SIGKILL: no checkpoint is written on the way out."""


def _killed_at(step_to_stop):
    def on_step(step, loss):
        if step == step_to_stop:
            raise _Killed

    return on_step


@pytest.mark.parametrize("stop", ["ctrl-c", "kill"])
def test_log_of_a_resumed_run_matches_a_straight_run(tmp_path, corpus, stop):
    """Steps logged after the last checkpoint by a killed run are dropped and logged again by the
    resume; the evaluation a Ctrl-C checkpoint skipped is run by the resume; wall time adds up."""
    text = corpus.read_text()
    cfg = tiny_train_config(steps=12)
    train(cfg, text, tmp_path / "straight", quiet=True)
    resumed = tmp_path / "resumed"
    if stop == "kill":
        with pytest.raises(_Killed):
            train(cfg, text, resumed, quiet=True, on_step=_killed_at(7))  # checkpoint at 4
        assert load_checkpoint(resumed).step == 4
    else:
        train(cfg, text, resumed, quiet=True, on_step=_interrupt_at(8))
    before = max(float(r["elapsed_s"]) for r in _log_rows(resumed)
                 if int(r["step"]) <= load_checkpoint(resumed).step)
    result = train(cfg, text, resumed, resume=True, quiet=True)
    assert _rows_without_timing(resumed) == _rows_without_timing(tmp_path / "straight")
    elapsed = [float(r["elapsed_s"]) for r in _log_rows(resumed)]
    assert elapsed == sorted(elapsed) and elapsed[-1] > before
    assert result.elapsed_s >= elapsed[-1] - 0.005  # the log rounds to 0.01 s, maybe upwards


def test_a_run_stopped_by_an_error_and_its_resume_leave_no_file_open(tmp_path, corpus):
    """The log is closed when an error stops the run (it was left to the collector, which
    warned), and reading it back on resume closes what it opened."""
    cfg = tiny_train_config(steps=6)
    # Files other tests left unreachable are finalized (and warned about) before, and no
    # automatic collection runs inside: what is recorded is this test's own.
    gc.collect()
    gc.disable()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            try:
                train(cfg, corpus.read_text(), tmp_path, quiet=True, on_step=_killed_at(5))
            except _Killed:
                pass
            gc.collect()
            train(cfg, corpus.read_text(), tmp_path, resume=True, quiet=True)
            gc.collect()
    finally:
        gc.enable()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_outputs_of_a_run(tmp_path, corpus):
    result = train(tiny_train_config(steps=8), corpus.read_text(), tmp_path, quiet=True)
    assert (tmp_path / "loss.png").stat().st_size > 1000
    rows = _log_rows(tmp_path)
    assert [int(r["step"]) for r in rows if r["loss"]] == list(range(1, 9))
    evals = [r for r in rows if r["val_loss"]]
    assert [int(r["step"]) for r in evals] == [4, 8]
    assert float(evals[-1]["val_bits_per_char"]) == pytest.approx(
        float(evals[-1]["val_loss"]) / np.log(2))
    assert result.final_val_loss == pytest.approx(float(evals[-1]["val_loss"]))
    ckpts = sorted(p.name for p in (tmp_path / "checkpoints").iterdir() if p.is_dir())
    assert ckpts == ["step-0000004", "step-0000008"]


def test_cli_train_sample_eval(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert main(["train", "--data", str(corpus), "--out", str(out), "--steps", "6",
                 "--warmup", "1", "--eval-interval", "3", "--eval-iters", "1", "--quiet",
                 "--batch-size", "2"]) == 0
    assert main(["sample", "--checkpoint", str(out), "--prompt", "the", "--max-new-tokens",
                 "40", "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "the" in text
    assert main(["eval", "--checkpoint", str(out), "--data", str(corpus), "--eval-iters",
                 "2"]) == 0
    assert "bits/char" in capsys.readouterr().out


def test_cli_wsd_schedule_holds_the_peak_then_decays_linearly(tmp_path, corpus):
    out = tmp_path / "run"
    assert main(["train", "--data", str(corpus), "--out", str(out), "--steps", "6",
                 "--warmup", "1", "--schedule", "wsd", "--decay-steps", "3", "--eval-iters",
                 "1", "--quiet", "--batch-size", "2"]) == 0
    with (out / "metrics.csv").open() as f:
        lrs = [float(r["lr"]) for r in csv.DictReader(f) if r["loss"]]
    # nano-cpu's lr 1e-3 and min_lr 1e-4: the peak until step 3, then 2/3 and 1/3 of the way
    assert lrs == pytest.approx([1e-3, 1e-3, 1e-3, 1e-3, 7e-4, 4e-4])
    saved = load_checkpoint(out).train_config
    assert (saved.schedule, saved.decay_steps) == ("wsd", 3)


def test_an_unknown_schedule_or_a_stray_decay_length_is_refused():
    with pytest.raises(ValueError, match="schedule must be one of"):
        tiny_train_config(schedule="step")
    with pytest.raises(ValueError, match=r"decay_steps \(5\) applies to the wsd schedule only"):
        tiny_train_config(decay_steps=5)


def test_cli_refuses_a_decay_length_without_wsd(tmp_path, corpus, capsys):
    assert main(["train", "--data", str(corpus), "--out", str(tmp_path / "run"),
                 "--decay-steps", "3"]) == 2
    assert capsys.readouterr().err.startswith(
        "pullback-gpt train: decay_steps (3) applies to the wsd")
    assert not (tmp_path / "run").exists()


def test_split_loss_is_the_mean_over_every_window(tmp_path, corpus):
    from pullback.gpt import GPT, CharDataset, CharTokenizer, GPTConfig
    from pullback.gpt.train import split_loss

    text = corpus.read_text()[:20000]
    tok = CharTokenizer.from_text(text)
    data = CharDataset(np.asarray(tok.encode(text), dtype=np.uint16))
    pb.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=tok.vocab_size, block_size=16, n_layer=1, n_head=2,
                          n_embd=16))
    x, y = data.windows("val", 16)
    per_window = [model(pb.tensor(x[i:i + 1]), pb.tensor(y[i:i + 1]))[1].item()
                  for i in range(len(x))]
    # batches of 7 leave a short last batch, which must weigh by its windows
    got = split_loss(model, data, "val", pb.Device("cpu"), batch_size=7)
    assert len(x) % 7 and got == pytest.approx(np.mean(per_window), rel=1e-5)


def test_cli_eval_full_reads_the_whole_val_split(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    main(["train", "--data", str(corpus), "--out", str(out), "--steps", "2", "--warmup", "1",
          "--quiet", "--eval-iters", "1", "--batch-size", "2"])
    capsys.readouterr()
    assert main(["eval", "--checkpoint", str(out), "--data", str(corpus), "--full"]) == 0
    printed = capsys.readouterr().out
    n_val = len(corpus.read_text()) - int(len(corpus.read_text()) * 0.9)
    assert f"the whole val split: {(n_val - 1) // 64} windows of 64 tokens" in printed


def test_sample_is_reproducible_from_the_cli(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    main(["train", "--data", str(corpus), "--out", str(out), "--steps", "2", "--warmup", "1",
          "--quiet", "--eval-iters", "1", "--batch-size", "2"])
    capsys.readouterr()
    runs = []
    for _ in range(2):
        main(["sample", "--checkpoint", str(out), "--max-new-tokens", "30", "--seed", "11"])
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1]


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(pb.errors.CheckpointError, match="no checkpoint"):
        load_checkpoint(tmp_path)


def test_a_run_that_fails_before_its_first_step_leaves_no_folder(tmp_path, corpus, monkeypatch):
    from pullback.gpt.data import CharDataset

    out = tmp_path / "run"
    with pytest.raises(ValueError, match="fewer than block_size"):  # checked before mkdir
        train(tiny_train_config(), "too short", out, quiet=True)
    assert not out.exists()

    def broken_batch(*args, **kwargs):
        raise RuntimeError("the device went away")

    monkeypatch.setattr(CharDataset, "batch", broken_batch)
    with pytest.raises(RuntimeError, match="went away"):  # inside the first step
        train(tiny_train_config(), corpus.read_text(), out, quiet=True)
    assert not out.exists()
    out.mkdir()  # a folder that was there before stays
    with pytest.raises(RuntimeError, match="went away"):
        train(tiny_train_config(), corpus.read_text(), out, quiet=True)
    assert out.is_dir()
