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
    """``launch(n, scenario, *args, flags=(), env=None)``: run a scenario on n processes (with
    ``env`` added to the environment); returns the CompletedProcess (stdout holds one JSON line
    per rank)."""
    exe = mpiexec()
    if exe is None:
        pytest.skip("no mpiexec: pip install mpich (or load your cluster's MPI)")

    def run(n: int, scenario: str, *args: str, flags: tuple[str, ...] = (),
            timeout: float = 240, survive_launcher: bool = False,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        # The timeout mode comes from ``env`` only, never from the caller's environment.
        inherited = {k: v for k, v in os.environ.items() if k != "PULLBACK_DISTRIBUTED_ON_TIMEOUT"}
        environment = {**inherited, "PYTHONWARNINGS": "ignore", **(env or {})}
        command = [sys.executable, str(SCENARIOS), scenario, *args]
        if survive_launcher:
            # Each rank under a shell that outlives it: when a rank is killed (SIGKILL, exit
            # status 137), MPICH's launcher does not tear the others down (as on clusters whose
            # launchers do not), so only pullback's own timeout can end the survivors' wait.
            # Other exit statuses go through, so that the job's own can be checked.
            command = ["bash", "-c", shlex.join(command) + "; s=$?; [ $s -eq 137 ] && exit 0; "
                       "exit $s"]
        return subprocess.run([exe, *flags, "-n", str(n), *command], capture_output=True,
                              text=True, timeout=timeout, env=environment)

    return run

