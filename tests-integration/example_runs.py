"""Running the examples as a user would: the shared pieces of test_examples.py, the per-example
tests and conftest.py's ``smoke_run`` fixture."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MISSING_DATA = 2  # the exit status of an example whose data set is not there (examples/README.md)


def run_example(script: Path, *args: str, cwd: Path | None = None,
                timeout: int = 600) -> subprocess.CompletedProcess:
    """Run an example as a user would (without the debugger's environment switch)."""
    env = {k: v for k, v in os.environ.items() if k != "PULLBACK_DEBUG"}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


@dataclass(frozen=True)
class SmokeRun:
    """One ``examples/<name>.py --smoke``, run from an empty folder with the default ``--out``."""

    name: str
    folder: Path
    result: subprocess.CompletedProcess

    @property
    def out(self) -> Path:
        """Where the run wrote its files: ``runs/<name>/`` of the folder it ran in."""
        return self.folder / "runs" / self.name

    def succeeded(self) -> SmokeRun:
        """This run, asserted to have worked; skips the test when its data set is missing."""
        if self.result.returncode == MISSING_DATA:
            pytest.skip(f"its data set is not here: {self.result.stderr.strip()}")
        assert self.result.returncode == 0, self.result.stderr
        return self

    def summary(self) -> Any:
        """The JSON summary an example prints as its last line."""
        return json.loads(self.result.stdout.splitlines()[-1])
