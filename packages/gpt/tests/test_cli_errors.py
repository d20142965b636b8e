"""``pullback-gpt`` as a user meets it, run as a subprocess: every expected mistake is one line
on stderr with exit status 2 and no traceback (``--debug`` shows it), leaves no run folder
behind, and a run folder is never silently replaced."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pullback.gpt import PRESETS, load_checkpoint
from pullback.gpt.cli import main

USAGE = 2
TINY_RUN = ["--steps", "2", "--warmup", "1", "--eval-iters", "1", "--batch-size", "2",
            "--quiet"]


def gpt(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k != "PULLBACK_DEBUG"}
    return subprocess.run([sys.executable, "-m", "pullback.gpt", *args], capture_output=True,
                          text=True, env={**clean, **(env or {})}, timeout=300)


def one_line_usage_error(result: subprocess.CompletedProcess, *words: str) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == USAGE, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("pullback-gpt ")
    for word in words:
        assert word in line, line
    return line


@pytest.fixture
def run_folder(tmp_path: Path, corpus: Path) -> Path:
    """A finished two-step run."""
    out = tmp_path / "run"
    assert main(["train", "--data", str(corpus), "--out", str(out), *TINY_RUN]) == 0
    return out


@pytest.mark.parametrize("content, words", [
    (b"", ["is empty"]),
    (b"to be or not\n" * 10, ["has 130 characters", "at least 641"]),  # nano-cpu's block of 64
    (b"caf\xe9 au lait\n" * 100, ["is not UTF-8 text", "0xe9", "offset 3"]),
], ids=["empty", "shorter-than-the-block", "not-utf8"])
def test_a_text_that_cannot_be_trained_on(tmp_path: Path, content: bytes,
                                          words: list[str]) -> None:
    text = tmp_path / "text.txt"
    text.write_bytes(content)
    out = tmp_path / "run"
    one_line_usage_error(gpt("train", "--data", str(text), "--out", str(out)), str(text), *words)
    assert not out.exists()


def test_the_shortest_accepted_text_is_the_one_the_message_names(tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text("ab" * 320 + "a")  # 641 characters: just long enough for a block of 64
    assert main(["train", "--data", str(text), "--out", str(tmp_path / "run"), *TINY_RUN]) == 0


@pytest.mark.parametrize("args, words", [
    (["--steps", "0"], ["steps must be at least 1, got 0"]),
    (["--steps", "10", "--warmup", "10"], ["warmup (10)", "shorter than the run's 10 steps"]),
    (["--resume"], ["--resume: no checkpoint in"]),
    (["--device", "nowhere"], ["--device nowhere:", "unknown device type 'nowhere'"]),
], ids=["no-steps", "warmup-too-long", "resume-without-checkpoint", "unknown-device"])
def test_a_bad_training_argument(tmp_path: Path, corpus: Path, args: list[str],
                                 words: list[str]) -> None:
    out = tmp_path / "run"
    one_line_usage_error(gpt("train", "--data", str(corpus), "--out", str(out), *args), *words)
    assert not out.exists()


def test_cuda_without_the_cuda_plugin_says_which_distribution(tmp_path: Path,
                                                             corpus: Path) -> None:
    # Disabled here (it may be installed); without it installed, the message is
    # "... provided by pullback-cuda, which is not installed: pip install ...".
    result = gpt("train", "--data", str(corpus), "--out", str(tmp_path / "run"), "--device",
                 "cuda", env={"PULLBACK_DISABLE_PLUGINS": "cuda"})
    one_line_usage_error(result, "--device cuda:", "pullback-cuda")
    assert not (tmp_path / "run").exists()


def test_a_short_run_scales_the_default_warmup_down_and_says_so(tmp_path: Path,
                                                               corpus: Path) -> None:
    out = tmp_path / "run"
    result = gpt("train", "--data", str(corpus), "--out", str(out), "--steps", "30",
                 "--eval-iters", "1", "--batch-size", "2", "--quiet")
    assert result.returncode == 0, result.stderr
    nano = PRESETS["nano-cpu"]
    scaled = 30 * nano.warmup // nano.steps
    assert len(result.stderr.splitlines()) == 1  # one line says it
    assert (f"--steps 30 is not longer than nano-cpu's warmup of {nano.warmup} steps; warmup "
            f"scaled down to {scaled}") in result.stderr
    assert load_checkpoint(out).train_config.warmup == scaled


@pytest.mark.parametrize("command", ["sample", "eval"])
def test_a_missing_checkpoint(tmp_path: Path, command: str) -> None:
    one_line_usage_error(gpt(command, "--checkpoint", str(tmp_path / "nothing")),
                         f"pullback-gpt {command}: --checkpoint: no checkpoint found at")


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    for result in (gpt("sample", "--checkpoint", str(tmp_path), "--debug"),
                   gpt("sample", "--checkpoint", str(tmp_path), env={"PULLBACK_DEBUG": "1"})):
        assert result.returncode == 1
        assert "Traceback" in result.stderr and "UsageError: --checkpoint" in result.stderr


def test_a_run_folder_is_never_silently_replaced(run_folder: Path, corpus: Path) -> None:
    before = (run_folder / "metrics.csv").read_text()
    line = one_line_usage_error(
        gpt("train", "--data", str(corpus), "--out", str(run_folder), *TINY_RUN),
        "already holds a run", "--resume", "--out NEW_FOLDER", "--overwrite")
    assert str(run_folder) in line
    assert (run_folder / "metrics.csv").read_text() == before
    one_line_usage_error(gpt("train", "--data", str(corpus), "--out", str(run_folder),
                             "--resume", "--overwrite"), "give one of them")


def test_a_killed_run_without_a_checkpoint_is_not_offered_resume(tmp_path: Path,
                                                                corpus: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "metrics.csv").write_text("step,loss\n1,4.2\n")  # killed before its first checkpoint
    line = one_line_usage_error(gpt("train", "--data", str(corpus), "--out", str(out)),
                                "it has no checkpoint to resume", "--overwrite")
    assert "continue it with --resume" not in line


def test_overwrite_replaces_the_run_and_keeps_other_files(run_folder: Path, corpus: Path) -> None:
    (run_folder / "notes.txt").write_text("mine")
    stale = run_folder / "checkpoints" / "step-9999999"
    stale.mkdir()
    assert main(["train", "--data", str(corpus), "--out", str(run_folder), "--overwrite",
                 *TINY_RUN, "--steps", "3"]) == 0
    assert not stale.exists() and (run_folder / "notes.txt").read_text() == "mine"
    with (run_folder / "metrics.csv").open() as f:
        assert [int(r["step"]) for r in csv.DictReader(f) if r["loss"]] == [1, 2, 3]


def test_every_printed_estimate_says_so_and_points_to_the_exact_loss(
        tmp_path: Path, corpus: Path) -> None:
    out = tmp_path / "run"
    trained = gpt("train", "--data", str(corpus), "--out", str(out), *TINY_RUN)
    assert trained.returncode == 0, trained.stderr
    evaluated = gpt("eval", "--checkpoint", str(out), "--data", str(corpus), "--eval-iters", "3")
    assert evaluated.returncode == 0, evaluated.stderr
    step_line = [ln for ln in trained.stdout.splitlines() if ln.startswith("step 2:")]
    assert step_line and "val loss" in step_line[0] and "(1-batch estimate)" in step_line[0]
    (summary,) = [ln for ln in trained.stdout.splitlines() if ln.startswith("finished")]
    assert "(1-batch estimate; the exact loss: pullback-gpt eval --checkpoint" in summary
    assert "--full)" in summary
    assert "val loss" in evaluated.stdout and "(3-batch estimate:" in evaluated.stdout
    assert "--full for the exact loss" in evaluated.stdout


def test_the_sample_ends_at_a_line_break(run_folder: Path) -> None:
    result = gpt("sample", "--checkpoint", str(run_folder), "--max-new-tokens", "200",
                 "--prompt", "t")
    assert result.returncode == 0, result.stderr
    sample = result.stdout[:-1]  # print's own line break
    assert sample.startswith("t") and len(sample) <= 201
    # a two-step model writes line breaks often: the sample is cut at its last one
    assert "\n" in result.stdout and result.stderr == ""


def test_a_sample_without_a_line_break_says_where_it_was_cut(run_folder: Path) -> None:
    result = gpt("sample", "--checkpoint", str(run_folder), "--max-new-tokens", "1",
                 "--prompt", "t", "--top-k", "1")
    assert result.returncode == 0, result.stderr
    printed = result.stdout[:-1]
    if "\n" in printed:
        pytest.skip("the model's likeliest character here is a line break")
    assert len(printed) == 2 and "cut at --max-new-tokens" in result.stderr


def test_train_help_gives_every_option_a_help_line_with_its_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pullback.gpt.cli import build_parser

    monkeypatch.setenv("COLUMNS", "1000")  # no line wrapping inside "nano-cpu"

    train_parser = build_parser()._subparsers._group_actions[0].choices["train"]
    for action in train_parser._actions:
        if action.option_strings == ["-h", "--help"]:
            continue
        assert action.help, action.option_strings
        if action.nargs != 0:  # a flag's default is "off"
            assert "default" in action.help, action.option_strings
    text = " ".join(train_parser.format_help().split())
    assert "default: nano-cpu" in text and "default: runs/gpt" in text
    assert "nano-cpu 2000" in text and "nano-cpu 100" in text and "default: cosine" in text


@pytest.mark.parametrize("argv, hint", [(["trian"], "did you mean train?"),
                                        (["train", "--schdule", "wsd"], "did you mean --schedule?"),
                                        (["sample", "--checkpoint", "x", "--top_k", "3"],
                                         "did you mean --top-k?")])
def test_a_typo_on_the_command_line_gets_did_you_mean(argv: list[str], hint: str,
                                                       capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(f"({hint})")
