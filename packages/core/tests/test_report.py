"""``python -m pullback.testing.report``: docs/errors.md comes from a real run of the error
cases (the raised class and message, not the expectations), one row per case."""

from __future__ import annotations

import pytest

from pullback.errors import ShapeError
from pullback.testing import report
from pullback.testing.opdb import Arg, ErrorCase, get_record

pytest.importorskip("torch", reason="the report runs PyTorch, its oracle")


def test_the_error_report_shows_what_the_run_raised(tmp_path) -> None:
    out = tmp_path / "errors.md"
    assert report.main(["--errors-only", "--errors-output", str(out),
                        "--records", "chunk,arange"]) == 0
    text = out.read_text()
    assert not (tmp_path / "gradcheck.md").exists()
    assert "| `chunk` | `(4,),0` | `ArgumentError` (ValueError, RuntimeError) | chunk: chunks " \
           "must be a positive int, got 0 | pass |" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == sum(len(get_record(n).error_list()) for n in ("chunk", "arange"))


def test_a_case_that_raises_the_wrong_error_is_a_failure_in_the_report() -> None:
    import numpy as np

    record = get_record("reshape")
    wrong = ErrorCase((Arg(np.ones((2, 3))), (4,)), TypeError, "reshape")
    result = report.RecordResult(record)
    raised = ShapeError("reshape: cannot reshape (2, 3) (6 elements) into (4,)")
    result.errors.append(report.ErrorRow(wrong, raised, "expected TypeError, got ShapeError"))
    text = report.render_errors([result], {"pullback": "test"}, [])
    assert "| **FAIL** |" in text and "## Failures" in text and "0 raise the expected" in text
