"""ONNX's backend node tests run through ``pullback.compiler.import_onnx`` and onnxruntime.

Every case that ``onnx.backend.test.loader.load_model_tests(kind="node")`` builds from the
installed onnx runs in a child process with a timeout (a worker that is killed and replaced
when a case hangs or crashes it), is compared with ONNX's own
``Runner.assert_similar_outputs`` at the case's tolerances, and is also run by onnxruntime. A
case is ``pass``, ``fail`` (an error at run time or outputs that differ), ``refused`` (an
``OnnxImportError``: the importer says it has no form for it), ``timeout`` or ``crash``.

    python tools/onnx_conformance.py                 # all cases, prints the summary as JSON
    python tools/onnx_conformance.py --write-docs    # and the table into docs/compiler.md
    python tools/onnx_conformance.py -k 'test_max_'  # the cases whose name matches a regex
    python tools/onnx_conformance.py --show-failures # one line per case pullback fails

The figure the issue asks for is ``passed / ort_passed``: of the cases onnxruntime passes, how
many pullback passes too.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections import Counter, defaultdict
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _child_pool import ChildPool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "compiler.md"
BEGIN, END = "<!-- onnx-conformance:begin -->", "<!-- onnx-conformance:end -->"


def _cases() -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.loader import load_model_tests

        return load_model_tests(kind="node")


def _compare(case: Any, outputs: list[Any], expected: list[Any]) -> None:
    import numpy as np
    from onnx import numpy_helper
    from onnx.backend.test.runner import Runner

    expected = [numpy_helper.to_array(e) if hasattr(e, "raw_data") else e for e in expected]
    outputs = [np.asarray(o) if not isinstance(o, (list, tuple)) and o is not None else o
               for o in outputs]
    Runner.assert_similar_outputs(expected, outputs, rtol=case.rtol, atol=case.atol,
                                  model_dir=case.name)


def _inputs(data: Any) -> list[Any]:
    from onnx import numpy_helper

    return [numpy_helper.to_array(x) if hasattr(x, "raw_data") else x for x in data]


def _run_pullback(case: Any) -> tuple[str, str]:
    import numpy as np

    import pullback as pb
    from pullback.compiler import OnnxImportError, import_onnx

    try:
        net = import_onnx(case.model)
        for inputs, expected in case.data_sets:
            with pb.no_grad():
                result = net(*_inputs(inputs))
            result = list(result) if isinstance(result, tuple) else [result]
            outputs = [r.detach().numpy() if isinstance(r, pb.Tensor) else
                       ([x.detach().numpy() if isinstance(x, pb.Tensor) else np.asarray(x)
                         for x in r] if isinstance(r, list) else r) for r in result]
            _compare(case, outputs, list(expected))
    except OnnxImportError as exc:
        return "refused", str(exc).splitlines()[0][:300]
    except Exception as exc:  # noqa: BLE001  (any error is this case's failure, reported)
        return "fail", f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}" \
            if str(exc).strip() else type(exc).__name__
    return "pass", ""


def _run_onnxruntime(case: Any) -> str:
    import onnxruntime as ort

    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.log_severity_level = 3  # its warnings would bury the summary
        session = ort.InferenceSession(case.model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        for inputs, expected in case.data_sets:
            outputs = session.run(None, dict(zip(names, _inputs(inputs))))
            _compare(case, outputs, list(expected))
    except Exception:  # noqa: BLE001  (onnxruntime's failures are only counted)
        return "fail"
    return "pass"


def _worker(conn: Connection, pattern: str) -> None:
    warnings.simplefilter("ignore")
    cases = {c.name: c for c in _cases() if re.search(pattern, c.name)}
    conn.send("ready")
    while True:
        name = conn.recv()
        if name is None:
            return
        case = cases[name]
        status, detail = _run_pullback(case)
        conn.send((name, status, detail, _run_onnxruntime(case)))


def _operator_of(name: str, operators: dict[str, str]) -> str:
    """The operator a case tests: the longest operator name (as ``test_<name>_...`` writes
    it, lower case with or without underscores) that the case's name starts with."""
    stem = name[len("test_"):]
    best = ""
    for key in operators:
        if (stem == key or stem.startswith(key + "_")) and len(key) > len(best):
            best = key
    return operators.get(best, stem.split("_")[0])


def _operators() -> dict[str, str]:
    import onnx.defs

    names: dict[str, str] = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        op = schema.name
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", op).lower()
        names[op.lower()] = op
        names[snake] = op
    return names


def _table(results: dict[str, dict[str, str]]) -> str:
    operators = _operators()
    by_op: dict[str, Counter] = defaultdict(Counter)
    for name, r in results.items():
        row = by_op[_operator_of(name, operators)]
        row["cases"] += 1
        row[r["pullback"]] += 1
        row["ort_pass"] += r["ort"] == "pass"
        row["both"] += r["ort"] == "pass" and r["pullback"] == "pass"
    total = Counter()
    for row in by_op.values():
        total.update(row)
    lines = [
        f"**pullback passes {total['both']} of the {total['ort_pass']} node tests that "
        f"onnxruntime passes ({100 * total['both'] / max(total['ort_pass'], 1):.1f} %)**; "
        f"of all {total['cases']} cases: {total['pass']} pass, {total['fail']} fail, "
        f"{total['refused']} refused, {total['timeout']} time out, {total['crash']} crash.",
        "",
        "| operator | cases | pass | fail | refused | onnxruntime passes | pullback of those |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for op in sorted(by_op):
        row = by_op[op]
        lines.append(f"| {op} | {row['cases']} | {row['pass']} | "
                     f"{row['fail'] + row['timeout'] + row['crash']} | {row['refused']} | "
                     f"{row['ort_pass']} | {row['both']} |")
    return "\n".join(lines)


def _write_docs(table: str) -> None:
    text = DOCS.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOCS} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOCS.write_text(f"{head}{BEGIN}\n{table}\n{END}{tail}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", "--pattern", default="", help="run the cases matching this regex")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the per-operator table into docs/compiler.md")
    parser.add_argument("--json", type=Path, help="write every case's result to this file")
    parser.add_argument("--show-failures", action="store_true",
                        help="print each case pullback does not pass, with its reason")
    args = parser.parse_args(argv)

    names = [c.name for c in _cases() if re.search(args.pattern, c.name)]
    results: dict[str, dict[str, str]] = {}

    def report(name: str, status: str, detail: str, ort_status: str) -> None:
        results[name] = {"pullback": status, "detail": detail, "ort": ort_status}

    pool = ChildPool(args.jobs, _worker, (args.pattern,), args.timeout)
    try:
        pool.run(names, report, lambda name, status, detail: report(name, status, detail,
                                                                      "unknown"))
    finally:
        pool.close()
    ort_passed = [n for n, r in results.items() if r["ort"] == "pass"]
    passed = [n for n in ort_passed if results[n]["pullback"] == "pass"]
    summary = {"cases": len(results), "ort_passed": len(ort_passed), "passed": len(passed),
               "ratio": round(len(passed) / max(len(ort_passed), 1), 4),
               **Counter(r["pullback"] for r in results.values())}
    if args.show_failures:
        for name in sorted(results):
            r = results[name]
            if r["pullback"] != "pass":
                print(f"{name}\t{r['pullback']}\tort={r['ort']}\t{r['detail']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    if args.write_docs:
        _write_docs(_table(results))
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
