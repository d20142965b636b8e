"""Helpers of pullback-distributed's tests."""

from __future__ import annotations

import json
import re
import subprocess


def rank_results(result: subprocess.CompletedProcess, n: int) -> list[dict]:
    """The JSON objects the ranks printed (mpiexec may join their lines), after checking that
    the run succeeded and every rank reported ok."""
    assert result.returncode == 0, result.stderr[-3000:]
    objects = [json.loads(m) for m in re.findall(r"\{[^{}]*\}", result.stdout)]
    assert sorted(o["rank"] for o in objects if o.get("ok")) == list(range(n)), result.stdout
    return objects
