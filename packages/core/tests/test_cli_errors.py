"""pullback.cli's top-level handler: a user's error is one line on stderr and an exit status, a
traceback only with --debug or PULLBACK_DEBUG=1; a closed stdout ends the program quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from pullback.cli import (EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_USAGE, UsageError,
                          run_command)
from pullback.errors import CheckpointError


def raising(exc: BaseException) -> Callable[[], int]:
    def command() -> int:
        raise exc
    return command


@pytest.fixture(autouse=True)
def no_debug_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULLBACK_DEBUG", raising=False)


@pytest.mark.parametrize("exc, status, line", [
    (UsageError("--steps must be at least 1"), EXIT_USAGE, "tool: --steps must be at least 1"),
    (CheckpointError("cannot read x/state.json:\n  bad JSON"), EXIT_ERROR,
     "tool: cannot read x/state.json: bad JSON"),
    (FileNotFoundError(2, "No such file or directory", "data.txt"), EXIT_ERROR,
     "tool: No such file or directory: data.txt"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid"), EXIT_ERROR,
     "tool: 'utf-8' codec can't decode byte 0xff in position 0: invalid"),
    (KeyboardInterrupt(), EXIT_INTERRUPTED, "tool: interrupted"),
], ids=["usage", "pullback-error", "os-error", "decoding", "ctrl-c"])
def test_an_expected_error_is_one_line_and_a_status(
        exc: BaseException, status: int, line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_command(raising(exc), "tool") == status
    captured = capsys.readouterr()
    assert captured.err == line + "\n" and captured.out == ""


def test_debug_or_the_variable_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError):
        run_command(raising(UsageError("x")), "tool", debug=True)
    monkeypatch.setenv("PULLBACK_DEBUG", "1")
    with pytest.raises(OSError):
        run_command(raising(OSError("disk full")), "tool")
    monkeypatch.setenv("PULLBACK_DEBUG", "0")
    assert run_command(raising(OSError("disk full")), "tool") == EXIT_ERROR


def test_a_bug_keeps_its_traceback() -> None:
    with pytest.raises(ZeroDivisionError):
        run_command(lambda: 1 // 0, "tool")


def test_the_status_of_a_command_that_works_is_its_own() -> None:
    assert run_command(lambda: 0, "tool") == 0
    assert run_command(lambda: 3, "tool") == 3


def pullback_cli(*args: str, **kwargs) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "PULLBACK_DEBUG"}
    return subprocess.Popen([sys.executable, "-m", "pullback", *args], stderr=subprocess.PIPE,
                            text=True, env=env, **kwargs)


def test_a_reader_that_goes_away_ends_the_listing_quietly() -> None:
    """``pullback plugins --json | head``: the pipe is closed before pullback writes."""
    process = pullback_cli("plugins", "--json", stdout=subprocess.PIPE)
    process.stdout.close()
    _, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_BROKEN_PIPE
    assert err == ""  # no BrokenPipeError traceback, no "Exception ignored" at exit


def test_a_bad_command_line_is_a_usage_error_without_a_traceback(tmp_path: Path) -> None:
    process = pullback_cli("plugins", "--no-such-option", stdout=subprocess.PIPE)
    _, err = process.communicate(timeout=120)
    assert process.returncode == EXIT_USAGE
    assert "Traceback" not in err and "unrecognized arguments: --no-such-option" in err
