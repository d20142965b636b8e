"""pullback-distributed's tests launch scenarios under mpiexec (MPICH's, from the mpich wheel
next to this Python, or one on PATH)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # distributed_support.py

from distributed_support import mpiexec  # noqa: E402

SCENARIOS = Path(__file__).parent / "mpi_scenarios.py"


@pytest.fixture
def launch():
    """``launch(n, scenario, *args, flags=())``: run a scenario on n processes; returns the
    CompletedProcess (stdout holds one JSON line per rank)."""
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec: pip install mpich (or load your cluster's MPI)")

    def run(n: int, scenario: str, *args: str, flags: tuple[str, ...] = (),
            timeout: float = 240, survive_launcher: bool = False) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        command = [sys.executable, str(SCENARIOS), scenario, *args]
        if survive_launcher:
            # Each rank under a shell that outlives it: when a rank is killed, MPICH's launcher
            # does not tear the others down (as on clusters whose launchers do not), so only
            # pullback's own timeout can end the survivors' wait.
            command = ["bash", "-c", shlex.join(command) + "; exit 0"]
        return subprocess.run([exe, *flags, "-n", str(n), *command], capture_output=True,
                              text=True, timeout=timeout, env=env)

    return run

