"""Write the gradient-check report (``docs/gradcheck.md``) and the error report
(``docs/errors.md``) from a real run.

    python -m pullback.testing.report [--output docs/gradcheck.md] [--errors-output
        docs/errors.md] [--errors-only] [--records add,matmul]

For every record of the op database (core's, and those loaded plugins add: see
:func:`pullback.testing.opdb.extension_records`) it runs every sample in every dtype against
PyTorch (values, gradients, double backward), gradcheck and gradgradcheck on the float64
samples, and the error cases; the first table gives the worst float64 relative errors and
whether everything passed, the second every error case: the bad input, the error raised and its
message, as this run produced them. ``--errors-only`` runs the error cases alone and writes only
the second. The process exits with status 1 when something failed (the reports are written
anyway).

PyTorch is the oracle here, so this command needs it installed; it is imported when the command
runs, never when the module is imported.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import platform
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .._files import write_atomic
from .compare import TOLERANCES, run_error_case
from .gradcheck import compare_jacobians, vector_jacobian_product
from .opdb import OP_DB, ErrorCase, OpRecord, PullbackFactory, Sample, error_cases, extension_records
from .oracle import compare_with_torch

COMMAND = "python -m pullback.testing.report"
# gradcheck's defaults: |analytical - numerical| <= 1e-5 + 1e-3 * |numerical|.
FD_ATOL, FD_RTOL = 1e-5, 1e-3


@dataclass(frozen=True)
class ErrorRow:
    """One error case as a run saw it: what was raised (``None``: nothing) and, when that is
    not what the case expects, the problem."""

    case: ErrorCase
    raised: BaseException | None
    problem: str | None


@dataclass
class RecordResult:
    """What one record's checks measured."""

    record: OpRecord
    samples: int = 0
    worst: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    errors: list[ErrorRow] = field(default_factory=list)

    def observe(self, kind: str, error: float | None) -> None:
        if error is not None:
            self.worst[kind] = max(self.worst.get(kind, 0.0), error)


def _finite_difference_errors(record: OpRecord, sample: Sample) -> tuple[float, float, str]:
    """Worst relative errors of gradcheck and gradgradcheck for one float64 sample."""
    bound = sample.bind(PullbackFactory())

    def fn(*leaves: Any) -> Any:
        return bound.call(record.fn, leaves)

    first = compare_jacobians(fn, bound.leaves, atol=FD_ATOL, rtol=FD_RTOL)
    vjp, inputs, names = vector_jacobian_product(fn, bound.leaves)
    second = compare_jacobians(vjp, inputs, atol=FD_ATOL, rtol=FD_RTOL, names=names)
    problems = "; ".join(f"{label}: {r.message}" for label, r in
                         (("gradcheck", first), ("gradgradcheck", second)) if not r.passed)
    return first.relative_error, second.relative_error, problems


def check_record(torch: Any, record: OpRecord, samples: bool = True) -> RecordResult:
    """Run every check of one record (only its error cases without ``samples``)."""
    result = RecordResult(record)
    for dtype in record.dtypes if samples else ():
        for sample in record.sample_list(dtype):
            result.samples += 1
            where = f"{record.name}-{dtype}-{sample.id}"
            try:
                outcome = compare_with_torch(torch, record, dtype, sample)
            except Exception as exc:  # noqa: BLE001 - a crash is a failure of this case
                result.failures.append(f"{where}: {type(exc).__name__}: {exc}")
                continue
            result.failures += [f"{where}: {f}" for f in outcome.failures]
            if dtype == "float64":
                for kind in ("forward", "backward", "double backward"):
                    result.observe(f"torch {kind}", outcome.worst(kind))
                if record.differentiable and sample.gradcheck and sample.has_grad_inputs:
                    first, second, problems = _finite_difference_errors(record, sample)
                    result.observe("fd backward", first)
                    result.observe("fd double backward", second)
                    if problems:
                        result.failures.append(f"{where}: {problems}")
    for rec, case in error_cases([record]):
        raised, problem = run_error_case(rec, case)
        result.errors.append(ErrorRow(case, raised, problem))
        if problem:
            result.failures.append(f"{rec.name} {case.id}: {problem}")
    return result


def _number(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "0" if value == 0 else f"{value:.1e}"


def _header(title: str, versions: dict[str, str], argv: Sequence[str]) -> list[str]:
    """A report's title and where it comes from: the command, when, and the versions."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join([COMMAND, *argv])
    return [f"# {title}", "",
            f"Generated by `{command}` on {now}, with "
            + ", ".join(f"{k} {v}" for k, v in versions.items()) + ". Do not edit by hand: "
            "rerun the command (or `nox -s report`).", ""]


def render(results: Sequence[RecordResult], versions: dict[str, str], argv: Sequence[str]) -> str:
    """The Markdown report."""
    failed = [r for r in results if r.failures]
    lines = _header("Gradient check and PyTorch parity of every op", versions, argv) + [
        f"{len(results)} records of the op database (`pullback.testing.opdb`), "
        f"{sum(r.samples for r in results)} samples over every dtype each record takes; "
        f"{len(results) - len(failed)} pass everything, {len(failed)} fail.",
        "",
        "Each error is the worst, over the record's float64 samples, of "
        "`max |a - e| / (|e| + atol/rtol)` (the allclose test as one number):",
        "",
        "* **vs PyTorch**: forward values, gradients of every input (`backward`) and the "
        "gradients of `<gradients, w>` with respect to the inputs and the cotangents "
        "(`2nd`), with float64's atol/rtol = 1e-12/1e-10;",
        "* **vs finite differences**: gradcheck (`backward`) and gradgradcheck (`2nd`), "
        f"central differences with eps = 1e-6, atol/rtol = {FD_ATOL:g}/{FD_RTOL:g} "
        "(`pullback.testing.gradcheck`).",
        "",
        "**Result** covers every sample in every dtype against PyTorch (tolerances below), "
        "gradcheck and gradgradcheck, and the record's error cases. `n/a`: not applicable "
        "(no gradient, or no sample where finite differences are valid).",
        "",
        "Tolerances (rtol, atol) against PyTorch: "
        + ", ".join(f"{k} ({v[0]:g}, {v[1]:g})" for k, v in TOLERANCES.items())
        + "; gradients in float16/bfloat16 twice that; integers and bools exactly.",
        "",
        "| op | dtypes | samples | fwd vs PyTorch | backward vs PyTorch | 2nd vs PyTorch "
        "| backward vs FD | 2nd vs FD | result |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        w = r.worst
        status = "pass" if not r.failures else f"**FAIL** ({len(r.failures)})"
        lines.append(
            f"| `{r.record.name}` | {', '.join(r.record.dtypes)} | {r.samples} "
            f"| {_number(w.get('torch forward'))} | {_number(w.get('torch backward'))} "
            f"| {_number(w.get('torch double backward'))} | {_number(w.get('fd backward'))} "
            f"| {_number(w.get('fd double backward'))} | {status} |")
    notes = [r for r in results if r.record.note]
    if notes:
        lines += ["", "## Notes", ""]
        lines += [f"* `{r.record.name}`: {r.record.note}" for r in notes]
    if failed:
        lines += ["", "## Failures", ""]
        for r in failed:
            lines += [f"* `{r.record.name}`:"] + [f"  * {f}" for f in r.failures[:20]]
    return "\n".join(lines) + "\n"


def _cell(text: str, limit: int = 400) -> str:
    """Text for a Markdown table cell (one line, pipes escaped, long messages cut)."""
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return text.replace("|", "\\|")


def _error_type(exc: BaseException) -> str:
    """The class, then the built-in classes it also is (what ``except`` clauses catch)."""
    builtin = [c.__name__ for c in type(exc).__mro__[1:]
               if c.__module__ == "builtins" and c not in (Exception, BaseException, object)]
    return f"`{type(exc).__name__}`" + (f" ({', '.join(builtin)})" if builtin else "")


def render_errors(results: Sequence[RecordResult], versions: dict[str, str],
                  argv: Sequence[str]) -> str:
    """The Markdown error report: one row per error case of every record."""
    rows = [(r.record, e) for r in results for e in r.errors]
    failed = [(record, e) for record, e in rows if e.problem]
    lines = _header("Errors: what bad input raises", versions, argv) + [
        f"{len(rows)} error cases of {len({record.name for record, _ in rows})} records of the op "
        f"database (`pullback.testing.opdb`, with the records of the installed plugins); "
        f"{len(rows) - len(failed)} raise the expected error with a message naming the function "
        f"and the offending value or shape, {len(failed)} do not.",
        "",
        "**Bad input** is the case as the test ids write it: tensor arguments by their shape "
        "(`.T` transposed, `[::2]` strided), then numbers and keywords. **Error** is the class "
        "raised and, in brackets, the built-in exceptions it also is, so that `except "
        "RuntimeError:` in code ported from PyTorch still catches it. **Message** is the "
        "message of this run.",
        "",
        "| function | bad input | error | message | result |",
        "|---|---|---|---|---|",
    ]
    for record, e in rows:
        shown = _cell(e.case.id, 160)
        error = "nothing raised" if e.raised is None else _error_type(e.raised)
        message = "" if e.raised is None else _cell(str(e.raised))
        status = "pass" if e.problem is None else "**FAIL**"
        lines.append(f"| `{record.name}` | `{shown}` | {error} | {message} | {status} |")
    if failed:
        lines += ["", "## Failures", ""]
        lines += [f"* `{record.name}` `{_cell(e.case.id, 160)}`: {_cell(e.problem or '')}"
                  for record, e in failed]
    return "\n".join(lines) + "\n"


def _versions(torch: Any) -> dict[str, str]:
    from .. import __version__

    return {"pullback": __version__, "numpy": np.__version__, "torch": torch.__version__,
            "Python": platform.python_version(), "platform": platform.platform(terse=True)}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the checks and write the report; 0 when everything passed."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", default="docs/gradcheck.md", help="where to write the report")
    parser.add_argument("--errors-output", default="docs/errors.md",
                        help="where to write the error report")
    parser.add_argument("--errors-only", action="store_true",
                        help="run the error cases only and write only the error report")
    parser.add_argument("--records", default=None,
                        help="comma-separated record names (default: the whole database)")
    args = parser.parse_args(argv)
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        print(f"{COMMAND}: PyTorch, the oracle, is not installed (pip install torch)",
              file=sys.stderr)
        return 2
    everything = OP_DB + extension_records()
    records = everything
    if args.records:
        wanted = {n.strip() for n in args.records.split(",")}
        records = tuple(r for r in everything if r.name in wanted)
        if unknown := wanted - {r.name for r in records}:
            parser.error(f"no records named {', '.join(sorted(unknown))}")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # NaN/inf samples on purpose; the values are checked
        results = [check_record(torch, r, samples=not args.errors_only) for r in records]
    shown = list(argv if argv is not None else sys.argv[1:])
    versions = _versions(torch)
    written = []
    if not args.errors_only:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.output, render(results, versions, shown), sync=False)
        written.append(args.output)
    Path(args.errors_output).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.errors_output, render_errors(results, versions, shown), sync=False)
    written.append(args.errors_output)
    failed = sum(1 for r in results if r.failures)
    print(f"wrote {' and '.join(written)}: {len(results)} records, {failed} failing")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
