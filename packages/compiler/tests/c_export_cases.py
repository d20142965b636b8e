"""One case of the C99 export battery, run in this process by test_export_c.py and again in a
worker process whose builds carry ASan and UBSan (``PULLBACK_NATIVE_SANITIZE`` set by
:func:`pullback.testing.isolation.sanitizer_environment`; the export's build reads it too):
the same test, with and without the sanitizers.

A case is ``{"model": name, "openmp": bool}``; ``run_case`` returns None when the compiled C
matches eager pullback, else what differed.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the worker imports this file by path

from export_battery import build, eager_outputs, mismatches  # noqa: E402
from pullback.compiler import export_c  # noqa: E402


def run_case(case: dict[str, Any]) -> str | None:
    model, inputs = build(case["model"])
    with tempfile.TemporaryDirectory() as folder:
        export = export_c(model, inputs, folder, name=case["model"])
        outputs = export.load(openmp=case.get("openmp", False))(*inputs)
    return mismatches(outputs, eager_outputs(model, inputs))
