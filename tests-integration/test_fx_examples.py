"""pytorch/examples' fx/ scripts, reproduced in tests-integration/ported/fx/ (rewritten by us,
each keeping its script's use of the torch.fx API), run under pullback with only their imports
changed, and print what they print under torch.fx: the same tables, the same generated code
(with pullback's module name for torch's), the same values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PORTED = Path(__file__).resolve().parent / "ported"
SCRIPTS = sorted(p.stem for p in (PORTED / "fx").glob("*.py"))

# pytorch/examples' fx/ folder (its scripts at the time of writing) and the ones not reproduced,
# with the reason.
UPSTREAM = {"custom_tracer", "inline_function", "invert", "module_tracer", "primitive_library",
            "profiling_tracer", "proxy_based_graph_creation", "replace_op",
            "subgraph_rewriter_basic_use", "wrap_output_dynamically", "native_interpreter"}
NOT_REPRODUCED = {
    # patches torch.autograd.profiler.record_function and records torch.ops.profiler calls:
    # pullback's profiler is pullback.debug.profile, and pullback has no torch.ops namespace
    "profiling_tracer",
    # lowers a graph to a TorchScript custom class written in C++ (torch.classes)
    "native_interpreter",
}

# Where pullback.fx prints something else on purpose (docs/fx.md, "Differences from torch.fx"):
# torch's text -> pullback's, after torch's module name became pullback's.
KNOWN_DIFFERENCES = {
    # pullback.arctan is pullback.atan (one function, whose name is atan)
    "invert": [("arctan", "atan")],
    # the generated code re-registers wrapped functions with the public pullback.fx.wrap
    "primitive_library": [("pullback.fx._symbolic_trace.wrap", "pullback.fx.wrap")],
}


def test_every_upstream_script_is_reproduced_or_said_why_not() -> None:
    assert set(SCRIPTS) == UPSTREAM - NOT_REPRODUCED


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_port_changes_only_import_lines(script: str) -> None:
    sys.path.insert(0, str(PORTED))
    from port import port

    source = (PORTED / "fx" / f"{script}.py").read_text().splitlines()
    ported = port("\n".join(source) + "\n").splitlines()
    changed = [(a, b) for a, b in zip(source, ported) if a != b]
    assert len(source) == len(ported) and changed
    assert all(a.lstrip().startswith(("import torch", "from torch")) for a, _ in changed)


def run(script: str, *framework: str) -> str:
    result = subprocess.run([sys.executable, str(PORTED / "port.py"), *framework,
                             str(PORTED / "fx" / f"{script}.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_prints_under_pullback_what_it_prints_under_torch(script: str) -> None:
    pytest.importorskip("torch", reason="the reference runs need PyTorch")
    pytest.importorskip("pullback.fx", reason="needs pullback-fx")
    theirs = run(script, "--torch").replace("torch", "pullback")
    for before, after in KNOWN_DIFFERENCES.get(script, []):
        assert before in theirs, f"{script}: the known difference {before!r} is gone"
        theirs = theirs.replace(before, after)
    assert lines(run(script)) == lines(theirs)
