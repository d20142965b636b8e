"""Before/after of a benchmark script across two git revisions, in alternating runs.

Did a change make pullback slower? Each revision is checked out once (``git worktree add`` under
a temporary folder, removed at the end). The benchmark script is this checkout's, the same on
both sides, so both do the same work; it runs with ``PYTHONPATH`` set to the revision's
``packages/*/src``, ahead of the editable installs, so each side imports its own pullback
(checked before the first run) with the same interpreter, NumPy and PyTorch. Runs
alternate (A, B, A, B, ...) so that a slow spell of a shared machine hits both sides alike.
Only the plugins named by ``--plugins`` load on both sides (``PULLBACK_PLUGINS``): a package
that exists in one revision only would otherwise load from the main checkout into the other.

Every JSON line the script prints is collected; per benchmark name and numeric field the
minimum and median over the runs of each revision are printed, with the ratios after/before,
as JSON lines. The PyTorch fields (``torch_ms``) of the same runs are the control: their ratio
far from 1 means the machine changed between the sides, not pullback.

Run (from the repository root):
    python benchmarks/compare_revisions.py 608eee0 HEAD core_overhead.py --rounds 8 -- --clock cpu
    python benchmarks/compare_revisions.py 608eee0 HEAD nn_cnn.py -- --threads 1 --clock cpu
    python benchmarks/compare_revisions.py 608eee0 HEAD gpt_step.py --rounds 4 -- --clock cpu
(arguments after ``--`` go to the benchmark script).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def checkout(revision: str, where: Path) -> Path:
    """A detached worktree of ``revision`` under ``where``."""
    tree = where / revision.replace("/", "_")
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-f", str(tree),
                    revision], check=True, capture_output=True)
    return tree


def environment(tree: Path, plugins: str) -> dict[str, str]:
    """The environment that makes ``python`` import pullback from ``tree``."""
    sources = sorted(glob.glob(f"{tree}/packages/*/src"))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sources), PULLBACK_PLUGINS=plugins)


def check_origin(tree: Path, env: dict[str, str]) -> None:
    """Exit unless ``pullback`` (core) imports from ``tree``."""
    found = subprocess.run([sys.executable, "-c", "import pullback; print(pullback.__file__)"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not found.startswith(str(tree)):
        raise SystemExit(f"pullback came from {found}, not from {tree}")


def run(tree: Path, env: dict[str, str], script: str, extra: list[str]) -> list[dict]:
    """The JSON records one run of ``script`` with ``tree``'s pullback (exits if it fails)."""
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *extra], env=env,
                          cwd=REPO / "benchmarks", capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{script} failed on {tree}:\n{done.stderr[-3000:]}")
    records = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            records.append(json.loads(line))
    return records


def summary(values: dict[tuple[str, str, str], list[float]], before: str,
            after: str) -> list[dict]:
    """One row per (benchmark, field): min and median of each side and their ratios."""
    rows = []
    for bench, field in sorted({(b, f) for b, f, _ in values}):
        a, b = values[(bench, field, before)], values[(bench, field, after)]
        if not a or not b:
            continue
        row = {"benchmark": bench, "field": field, "runs": min(len(a), len(b)),
               "before": before, "after": after,
               "before_min": min(a), "after_min": min(b),
               "before_median": statistics.median(a), "after_median": statistics.median(b)}
        if min(a):
            row["ratio_min"] = round(min(b) / min(a), 4)
        if statistics.median(a):
            row["ratio_median"] = round(statistics.median(b) / statistics.median(a), 4)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("script", help="a file of benchmarks/, e.g. core_overhead.py")
    parser.add_argument("--rounds", type=int, default=6, help="runs per revision")
    parser.add_argument("--plugins", default="nn,optim,gpt",
                        help="the plugins both sides load (PULLBACK_PLUGINS)")
    parser.add_argument("--fields", default="pullback_ms,torch_ms,ratio",
                        help="comma separated numeric fields to report ('all' for every one)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    extra = argv[split + 1:]  # after --: the benchmark script's own arguments
    fields = None if args.fields == "all" else set(args.fields.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        trees = {rev: checkout(rev, Path(tmp)) for rev in (args.before, args.after)}
        envs = {rev: environment(tree, args.plugins) for rev, tree in trees.items()}
        values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        try:
            for rev, tree in trees.items():
                check_origin(tree, envs[rev])
            for _ in range(args.rounds):
                for rev, tree in trees.items():
                    for record in run(tree, envs[rev], args.script, extra):
                        for field, value in record.items():
                            if (isinstance(value, (int, float)) and not isinstance(value, bool)
                                    and (fields is None or field in fields)):
                                values[(record.get("benchmark", "?"), field, rev)].append(value)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force",
                                str(tree)], capture_output=True)
    for row in summary(values, args.before, args.after):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
