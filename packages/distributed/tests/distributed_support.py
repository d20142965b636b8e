"""Helpers of pullback-distributed's tests."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path


def mpiexec() -> str | None:
    """MPICH's mpiexec beside this Python (the mpich wheel), or one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else shutil.which("mpiexec")


def rank_results(result: subprocess.CompletedProcess, n: int) -> list[dict]:
    """The JSON objects the ranks printed (mpiexec may join their lines), after checking that
    the run succeeded and every rank reported ok."""
    assert result.returncode == 0, result.stderr[-3000:]
    objects = [json.loads(m) for m in re.findall(r"\{[^{}]*\}", result.stdout)]
    assert sorted(o["rank"] for o in objects if o.get("ok")) == list(range(n)), result.stdout
    return objects
