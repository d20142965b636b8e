"""Names handed to ``export_c`` (docs/compiler.md: identifiers never clash): a name the C
library declares, a macro of its headers, a name the standalone program uses, compiled with the
strict flags into the library and the program; an export rebuilt in the same folder under the
same name and loaded again in the same process runs the new model; the compiler's outputs are
never written through a planted link."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import pullback as pb
import pullback.nn as nn
from export_battery import eager_outputs, mismatches
from pullback.compiler import cortex_m4_unavailable, export_c
from pullback.compiler._c99.build import compiler
from pullback.compiler._c99.names import c_identifier
from pullback.errors import UnsafePathError

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (set $CC)")

# names of math.h, stdint.h, stdio.h, stdlib.h, string.h, time.h (functions, types, macros),
# C99's reserved patterns, and the standalone program's own names before they took pb_
CLASHING = ["expf", "sqrtf", "float_t", "isnormal", "INT8_MAX", "HUGE_VAL", "out0",
            "sample0_in0", "EOF", "fopen", "main", "printf", "FILE", "stdout", "time",
            "clock_gettime", "timespec", "best", "ns", "memcpy", "strlen", "token", "EDOM",
            "UINT64_C", "size_t", "NULL", "errno", "Reset_Handler", "tanhf", "INFINITY",
            "exit", "abs", "i"]


def _model(seed: int) -> tuple[nn.Module, pb.Tensor]:
    pb.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)), pb.randn(2, 4)


@pytest.mark.parametrize("name", CLASHING)
def test_a_name_that_could_clash_still_compiles_and_runs(tmp_path, name):
    model, x = _model(0)
    export = export_c(model, x, tmp_path, name=name)
    assert re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", export.name)
    want = eager_outputs(model, (x,))
    assert mismatches(export.load()(x), want) is None  # the library, -Werror -pedantic
    run = export.run_native([[x.numpy()]])  # the standalone program around it
    assert mismatches(run.outputs[0], want) is None


def test_library_names_are_mangled_and_others_kept():
    assert c_identifier("expf") == "expf_" and c_identifier("INT8_MAX") == "INT8_MAX_"
    assert c_identifier("int_fast16_t") == "int_fast16_t_"
    assert c_identifier("net") == "net" and c_identifier("mlp") == "mlp"
    assert c_identifier("model") == "model" and c_identifier("lenet") == "lenet"


@pytest.mark.parametrize("name", ["sqrtf", "out0", "Reset_Handler"])
def test_a_clashing_name_on_the_emulated_cortex_m4(tmp_path, name):
    why = cortex_m4_unavailable()
    if why:
        pytest.skip(why)
    model, x = _model(0)
    export = export_c(model, x, tmp_path, name=name)
    run = export.run_cortex_m4([[x.numpy()]])
    assert mismatches(run.outputs[0], eager_outputs(model, (x,))) is None


def test_a_reloaded_export_runs_the_model_exported_last(tmp_path):
    a, x = _model(1)
    b, _ = _model(2)
    first = export_c(a, x, tmp_path, name="net").load()
    np.testing.assert_allclose(first(x)[0], a(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    second = export_c(b, x, tmp_path, name="net").load()
    got = second(x)[0]
    np.testing.assert_allclose(got, b(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, a(x).detach().numpy())
    # the first library object keeps computing its own model
    np.testing.assert_allclose(first(x)[0], a(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    # and the same model loaded twice shares one copy
    again = export_c(b, x, tmp_path, name="net").load()
    np.testing.assert_array_equal(again(x)[0], got)


@pytest.mark.parametrize("planted", ["net.c", "net.h", "libnet.so", "net_main", "net_main.c"])
def test_outputs_are_never_written_through_a_planted_link(tmp_path, planted):
    model, x = _model(0)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "export"
    out.mkdir()
    (out / planted).symlink_to(victim)
    with pytest.raises(UnsafePathError, match=f"refusing to replace .*{planted}"):
        export = export_c(model, x, out, name="net")
        export.load()
        export.run_native([[x.numpy()]])
    assert victim.read_bytes() == b"precious"
    assert not [n for n in os.listdir(out) if n.startswith(".build-")]
