"""C99 export: the battery compiled with the strict flags (with and without OpenMP, and under
ASan and UBSan), loaded with ctypes and compared with eager pullback; hostile names; the arena
plan; what the C links against; a standalone program; the emulated Cortex-M4."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
from c_export_cases import run_case
from export_battery import MODELS, build, eager_outputs, elementwise_case, mismatches
from pullback.compiler import ExportError, cortex_m4_unavailable, export_c, trace
from pullback.compiler._c99.arena import Buffer, plan
from pullback.compiler._c99.build import compiler
from pullback.testing.isolation import Workers

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (set $CC)")
CASES = Path(__file__).with_name("c_export_cases.py")


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_compiled_c_matches_eager_pullback(model):
    assert run_case({"model": model}) is None, run_case({"model": model})


@pytest.mark.parametrize("model", ["lenet", "transformer_block"])
def test_openmp_builds_match_too(model):
    problem = run_case({"model": model, "openmp": True})
    assert problem is None, problem


def test_the_same_cases_pass_under_address_and_undefined_sanitizers():
    workers = Workers(CASES, "run_case")
    try:
        runner = workers.get("sanitized", unavailable=pytest.skip)
        outcomes = runner.run([{"model": m} for m in sorted(MODELS)])
    finally:
        workers.close()
    failed = [o.describe() for o in outcomes if not o.ok]
    assert not failed, "\n".join(failed)


class Hostile(nn.Module):
    NAMES = ['say "hi"', "new\nline", "int", "na\u00efve \u00f1", "a-b", "a_b", "*/ x /*",
             "??/", "0start", "_", "exp", "\u0434\u0430"]

    def __init__(self) -> None:
        super().__init__()
        for name in self.NAMES:
            self.add_module(name, nn.Linear(3, 3))

    def forward(self, x):
        for name in self.NAMES:
            x = getattr(self, name)(x)
        return x


def test_hostile_module_names_become_distinct_valid_identifiers(tmp_path):
    pb.manual_seed(0)
    model, x = Hostile(), pb.randn(2, 3)
    export = export_c(model, x, tmp_path, name='int "model"\n\u00e9')
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", export.name) and export.source.name == \
        f"{export.name}.c"
    text = export.source.read_text()
    assert text.isascii() and "??" not in text
    arrays = re.findall(r"static const float (\w+)\[", text)
    assert len(arrays) == 2 * len(Hostile.NAMES) and len(set(arrays)) == len(arrays)
    for comment in re.findall(r"/\*(.*?)\*/", text, re.S):
        assert "/*" not in comment  # nothing closed a comment early
    np.testing.assert_allclose(export.load()(x)[0], eager_outputs(model, (x,))[0], rtol=1e-5,
                               atol=1e-6)


def test_the_arena_plan_never_overlaps_two_live_buffers():
    rng = np.random.default_rng(0)
    for _ in range(50):
        buffers = []
        for i in range(30):
            first = int(rng.integers(0, 40))
            buffers.append(Buffer(i, int(rng.integers(1, 500)), 4, first,
                                  first + int(rng.integers(0, 8))))
        result = plan(buffers)
        assert result.nbytes <= sum(-(-b.nbytes // 64) * 64 for b in buffers)
        for a in buffers:
            for b in buffers:
                if a is not b and a.first <= b.last and b.first <= a.last:
                    a0, b0 = a.offset * 4, b.offset * 4
                    assert a0 + a.nbytes <= b0 or b0 + b.nbytes <= a0, (a, b)


def test_a_deep_network_reuses_its_arena(tmp_path):
    pb.manual_seed(0)
    layers = [m for _ in range(8) for m in (nn.Linear(64, 64), nn.Tanh())]
    model, x = nn.Sequential(*layers), pb.randn(4, 64)
    export = export_c(model, x, tmp_path, name="deep")
    assert export.arena_bytes == 2 * 4 * 64 * 4  # two live activations at any time
    assert export.naive_bytes == 7 * 4 * 64 * 4  # seven intermediate values (the 8th is `out`)
    assert f"#define DEEP_ARENA_BYTES {export.arena_bytes} " in export.header.read_text()
    assert mismatches(export.load()(x), eager_outputs(model, (x,))) is None


def test_batch_norm_is_folded_into_the_convolutions(tmp_path):
    model, inputs = build("lenet")
    export = export_c(model, inputs, tmp_path, name="lenet")
    ops = export.graph.op_counts()
    assert ops["nn.conv2d"] == 2 and "rsqrt" not in ops and "sub" not in ops, ops


def test_the_c_needs_nothing_but_libm_and_memcpy(tmp_path):
    model, inputs = build("transformer_block")
    export = export_c(model, inputs, tmp_path, name="block")
    obj = tmp_path / "block.o"
    subprocess.run([compiler(), "-std=c99", "-O2", "-c", str(export.source), "-o", str(obj)],
                   check=True)
    undefined = set(subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True,
                                   check=True).stdout.split()) - {"U"}
    libm = _shared_library_symbols("libm.so")
    if libm is None:
        pytest.skip("no shared libm to compare with")
    # the C library's memory moves (GCC may turn copy loops into them), else libm alone
    assert undefined - libm <= {"memcpy", "memset", "memmove"}, undefined - libm
    assert "malloc" not in export.source.read_text()


def _shared_library_symbols(name):
    """The functions a shared library of the host compiler's exports (None: not found)."""
    path = subprocess.run([compiler(), f"-print-file-name={name}"], capture_output=True,
                          text=True).stdout.strip()
    if not Path(path).is_file():
        return None
    if Path(path).read_bytes()[:4] != b"\x7fELF":  # a linker script naming the real one
        found = re.search(r"(/\S*libm\.so\.\d+)", Path(path).read_text())
        if found is None:
            return None
        path = found.group(1)
    listed = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True,
                            text=True).stdout
    return {line.split()[-1].split("@")[0] for line in listed.splitlines() if line.strip()}


def test_a_graph_and_several_inputs_and_outputs(tmp_path):
    pb.manual_seed(0)
    w = pb.randn(4, 3)

    def f(x, y):
        h = x @ w + y
        return pb.relu(h), h.sum(axis=1)

    x, y = pb.randn(5, 4), pb.randn(1, 3)
    with pb.no_grad():
        graph = trace(f, x, y)
    export = export_c(graph, None, tmp_path, name="two")
    assert len(export.inputs) == 2 and len(export.outputs) == 2
    assert mismatches(export.load()(x, y), eager_outputs(f, (x, y))) is None


def test_a_standalone_program_through_the_single_entry_point(tmp_path):
    model, inputs = build("gpt")
    export = export_c(model, inputs, tmp_path, name="gpt")
    assert "void gpt(const int64_t *PULLBACK_RESTRICT in, float *PULLBACK_RESTRICT out);" in \
        export.header.read_text()
    samples = [[x.numpy() for x in inputs], [np.flip(inputs[0].numpy(), 1).copy()]]
    run = export.run_native(samples, repeats=3)
    second = (pb.tensor(samples[1][0]),)
    assert mismatches(run.outputs[0], eager_outputs(model, inputs)) is None
    assert mismatches(run.outputs[1], eager_outputs(model, second)) is None
    assert run.time_ns > 0 and run.cpu_time_ns > 0


def test_every_elementwise_op_exports_as_its_kernel_computes(tmp_path):
    """Generated from the c_scalar rule table: each op alone on inputs of its own, all of them
    in one export (one compile), each output against the op's kernel."""
    from pullback.compiler._c_rules import C_SCALAR_RULES

    ops = sorted(C_SCALAR_RULES)
    cases = [elementwise_case(op) for op in ops]
    inputs = tuple(a for _, args in cases for a in args)

    def all_ops(*arrays):
        outs, at = [], 0
        for f, args in cases:
            outs.append(f(*arrays[at:at + len(args)]))
            at += len(args)
        return tuple(outs)

    export = export_c(all_ops, inputs, tmp_path, name="elementwise")
    got, want = export.load()(*inputs), eager_outputs(all_ops, inputs)
    wrong = [op for op, a, e in zip(ops, got, want) if mismatches([a], [e]) is not None]
    assert not wrong, wrong


def test_an_op_without_a_c99_rule_is_named_with_the_line(tmp_path):
    with pytest.raises(ExportError, match=r"op 'cumsum' has no C99 rule \(at .*test_export_c"):
        export_c(lambda x: pb.cumsum(x, 0), pb.randn(3, 2), tmp_path)


@pytest.mark.parametrize("model", ["mlp", "lenet"])
def test_the_mlp_and_the_cnn_on_an_emulated_cortex_m4(model, tmp_path):
    why = cortex_m4_unavailable()
    if why:
        pytest.skip(why)
    net, inputs = build(model)
    export = export_c(net, inputs, tmp_path, name=model)
    run = export.run_cortex_m4([[x.numpy() for x in inputs]])
    assert mismatches(run.outputs[0], eager_outputs(net, inputs)) is None
    # the model's flash holds its weights; its RAM is the arena (and nothing else)
    assert run.model_sizes.flash >= export.weight_bytes
    assert run.model_sizes.bss == export.arena_bytes and run.model_sizes.data == 0
