"""The worker of :class:`pullback.testing.isolation.IsolatedRunner` (not for direct use).

    python -m pullback.testing._isolated_worker FILE FUNCTION

Reads one JSON list of cases per line from stdin, calls ``FUNCTION(case)`` for each and writes
one JSON line per case, ``{"problem": null}`` or ``{"problem": "..."}``, flushed right away: when
the process dies, the lines written say which cases finished.
"""

from __future__ import annotations

import faulthandler
import importlib.util
import json
import os
import sys
import traceback
import warnings
from typing import Any, Callable


def _load(path: str, function: str) -> Callable[[Any], Any]:
    spec = importlib.util.spec_from_file_location("_isolated_cases", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return getattr(module, function)


def main(argv: list[str]) -> int:
    # The results get a private copy of stdout; anything else written to fd 1 (a print, C's
    # printf) goes to stderr, so that it cannot garble them.
    results = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    faulthandler.enable()  # a crash prints where it happened (the runner reports stderr)
    run = _load(argv[0], argv[1])
    warnings.simplefilter("ignore")  # NaN, inf and overflow are inputs here on purpose
    results.write(json.dumps({"ready": True}) + "\n")  # imports done: cases may be timed
    results.flush()
    for line in sys.stdin:
        for case in json.loads(line):
            try:
                problem = run(case)
            except Exception:  # noqa: BLE001 - reported as the case's problem
                problem = "raised " + traceback.format_exc(limit=-3).strip()
            results.write(json.dumps({"problem": problem}) + "\n")
            results.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
