"""Run a benchmark under mpiexec: a script started without a launcher starts itself again on
``--ranks`` processes (MPICH's mpiexec beside this Python, or one on PATH). Not a benchmark."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def relaunch_under_mpiexec(ranks: int, threads_per_rank: int) -> None:
    """Start ``sys.argv`` on ``ranks`` processes and exit with its status, unless this process
    was itself started by a launcher."""
    from pullback.distributed import launched_world_size

    if launched_world_size() > 1 or os.environ.get("PULLBACK_BENCH_LAUNCHED"):
        return
    beside = Path(sys.executable).parent / "mpiexec"
    exe = str(beside) if beside.exists() else shutil.which("mpiexec")
    if exe is None:
        sys.exit("no mpiexec: pip install mpich")
    env = {**os.environ, "PULLBACK_BENCH_LAUNCHED": "1"}
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "PULLBACK_NUM_THREADS"):
        env[var] = str(threads_per_rank)
    sys.exit(subprocess.call([exe, "-n", str(ranks), sys.executable, *sys.argv], env=env))
