"""One case of the C99 export battery, run in this process by test_export_c.py and again in a
worker process whose builds carry ASan and UBSan (``PULLBACK_NATIVE_SANITIZE`` set by
:func:`pullback.testing.isolation.sanitizer_environment`; the export's build reads it too):
the same test, with and without the sanitizers.

A case is ``{"model": name, "openmp": bool}``; ``run_case`` returns None when the compiled C
matches eager pullback, else what differed. Sanitized builds are compiled at ``-O0`` (with the
same warnings as errors): GCC takes four times longer over these files with ASan and UBSan at
``-O2`` (9 s against 2 s for the Transformer block), and the sanitizers check the same
accesses and arithmetic either way.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))  # the worker imports this file by path

from export_battery import build, eager_outputs, mismatches  # noqa: E402
from pullback.compiler import export_c  # noqa: E402
from pullback.compiler._c99.build import STRICT_FLAGS  # noqa: E402

SANITIZED_FLAGS = tuple("-O0" if f.startswith("-O") else f for f in STRICT_FLAGS)


def run_case(case: dict[str, Any]) -> str | None:
    model, inputs = build(case["model"])
    with tempfile.TemporaryDirectory() as folder:
        export = export_c(model, inputs, folder, name=case["model"])
        flags = SANITIZED_FLAGS if os.environ.get("PULLBACK_NATIVE_SANITIZE") else STRICT_FLAGS
        outputs = export.load(openmp=case.get("openmp", False), flags=flags)(*inputs)
    return mismatches(outputs, eager_outputs(model, inputs))
