"""The CUDA sources on a machine without a GPU: they compile with nvcc for Hopper (sm_90) and
Ampere (sm_80), every kernel fits its launch (registers, shared memory, no spills), and the
sources and the Python launchers agree on names and block sizes."""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from pullback.cuda._kernels import _source, adamw, layer_norm, matmul, philox
from pullback.cuda._kernels._rows import row_threads
from pullback.cuda._kernels._source import MODULES, check_args, entry_points, source

ARCHS = ("sm_90", "sm_80")


def _compile(nvcc: str, tmp_path: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    cu = tmp_path / f"{module}.cu"
    cu.write_text(source(module))  # exactly the text NVRTC gets at run time
    out = subprocess.run([nvcc, "-std=c++17", *args, str(cu)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, f"nvcc {' '.join(args)} {module}.cu failed:\n{out.stderr}"
    assert "warning" not in out.stderr.lower(), out.stderr
    return out


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("module", MODULES)
def test_compiles_to_ptx_with_every_entry_point(nvcc, tmp_path, module, arch):
    _compile(nvcc, tmp_path, module, "--ptx", f"-arch={arch}", "-o", f"{module}.ptx")
    ptx = (tmp_path / f"{module}.ptx").read_text()
    found = set(re.findall(r"\.visible \.entry (\w+)\(", ptx))
    assert found == set(entry_points(module))


@pytest.mark.parametrize("module", MODULES)
def test_kernels_fit_their_launch_on_hopper(nvcc, tmp_path, module):
    """ptxas' resource report: no register spills, static shared memory under the 48 KiB a
    launch gets without opting in, and one block's registers fit an SM's 64K."""
    out = _compile(nvcc, tmp_path, module, "-cubin", "-arch=sm_90", "-Xptxas", "-v",
                   "-o", f"{module}.cubin")
    reports = re.findall(r"Compiling entry function '(\w+)'.*?Used (\d+) registers[^\n]*?"
                         r"(?:(\d+) bytes smem)?\n", out.stderr, re.DOTALL)
    assert {name for name, *_ in reports} == set(entry_points(module))
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", out.stderr)
    assert spills and all(s == ("0", "0") for s in spills), out.stderr
    for name, registers, smem in reports:
        assert int(smem or 0) <= 48 * 1024, (name, smem)
        assert int(registers) * _launch_bounds(module, name) <= 65536, (name, registers)


@pytest.fixture(scope="module")
def nvrtc():
    """NVRTC, the compiler CuPy runs on the user's machine (it needs no GPU, only the library:
    pip install nvidia-cuda-nvrtc-cu12 next to cupy-cuda12x)."""
    try:
        from cupy_backends.cuda.libs import nvrtc

        nvrtc.getVersion()
    except Exception as exc:  # no CuPy, or no NVRTC library
        pytest.skip(f"NVRTC is not loadable ({type(exc).__name__}: {exc})")
    return nvrtc


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("module", MODULES)
def test_compiles_with_nvrtc_as_cupy_will(nvrtc, module, arch):
    """nvcc includes the toolkit's headers; NVRTC does not, so what nvcc accepts can still fail
    at run time (INFINITY, say). This compiles what CuPy compiles, with its options."""
    from pullback.cuda._kernels._module import NVRTC_OPTIONS

    prog = nvrtc.createProgram(source(module), f"{module}.cu", [], [])
    try:
        try:
            # With the options CuPy adds itself (cupy/cuda/compiler.py).
            nvrtc.compileProgram(prog, [*NVRTC_OPTIONS, "-ftz=true",
                                        "--device-as-default-execution-space",
                                        f"--gpu-architecture=compute_{arch[3:]}"])
        except Exception:
            pytest.fail(f"NVRTC rejects {module}.cu:\n{nvrtc.getProgramLog(prog)}")
        ptx = nvrtc.getPTX(prog)
        ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    finally:
        nvrtc.destroyProgram(prog)
    assert set(re.findall(r"\.visible \.entry (\w+)\(", ptx)) == set(entry_points(module))


def _launch_bounds(module: str, name: str) -> int:
    text = source(module)
    macros = dict(re.findall(r"#define (\w+) (\d+)", text))
    if module == "matmul":
        return int(macros["MM_THREADS"])
    bound = re.search(r"__launch_bounds__\((\w+(?: \* \w+)?)\)\s*\n?\s*" + name + r"\(", text)
    assert bound, f"{name} has no __launch_bounds__"
    value = 1
    for factor in bound.group(1).split(" * "):
        value *= int(macros.get(factor, factor))
    return value


def test_launchers_use_every_kernel_and_only_existing_ones():
    called = set()
    for module in MODULES:
        text = (_source.KERNEL_DIR / f"{module}.py").read_text()
        called |= set(re.findall(r'launch\("(\w+)", "(\w+)"', text))
    for dtype, a_t, b_t, aligned in itertools.product(matmul.DTYPES, (False, True),
                                                      (False, True), (False, True)):
        plan = matmul.plan_matmul((8, 8), matmul.Operand(a_t, 8, 0), (8, 8),
                                  matmul.Operand(b_t, 8, 0), dtype, aligned)
        called.add(("matmul", plan.kernel))
    defined = {(m, n) for m in MODULES for n in entry_points(m)}
    assert called == defined


def test_block_sizes_match_launch_bounds():
    assert _launch_bounds("matmul", "matmul_f32_nn") == matmul.THREADS == 256
    assert _launch_bounds("adamw", "adam_step") == adamw.THREADS
    assert _launch_bounds("philox", "philox4x32_10") == philox.THREADS
    assert (_launch_bounds("layer_norm", "layer_norm_backward_params")
            == layer_norm.PARAM_COLS * layer_norm.PARAM_ROWS)
    for name in ("layer_norm_forward", "layer_norm_backward_input"):
        assert _launch_bounds("layer_norm", name) >= row_threads(10**9)
    for name in ("softmax_forward", "softmax_backward"):
        assert _launch_bounds("softmax", name) >= row_threads(10**9)
    macros = dict(re.findall(r"#define (\w+) (\d+)", source("layer_norm")))
    assert (int(macros["LN_COLS"]), int(macros["LN_ROWS"])) == (layer_norm.PARAM_COLS,
                                                                 layer_norm.PARAM_ROWS)
    mm = dict(re.findall(r"#define (\w+) (\d+)", source("matmul")))
    assert int(mm["MM_BM"]) == int(mm["MM_BN"]) == matmul.TILE


@pytest.mark.parametrize("module", MODULES)
def test_sources_need_no_toolkit_headers(module):
    """NVRTC finds no CUDA headers on machines with only the driver and CuPy's wheels."""
    code = re.sub(r"//[^\n]*", "", source(module))
    assert "#include <" not in code
    assert '#include "' not in code  # local headers are pasted in


def test_argument_builders_fit_the_c_signatures():
    """CuPy passes kernel arguments as given: a Python int or a float64 where the kernel takes
    an int or a float would be read as garbage. The builders' tuples must fit exactly."""
    a, b = np.zeros((8, 16), np.float32), np.zeros((16, 4), np.float32)
    plan = matmul.plan_matmul(a.shape, matmul.Operand(False, 16, 0), b.shape,
                              matmul.Operand(False, 4, 0), "float32", True)
    check_args("matmul", plan.kernel, matmul.kernel_args(plan, a, b, np.zeros((8, 4), np.float32)))
    p = np.zeros(10, np.float32)
    for vmax in (None, p.copy()):
        check_args("adamw", "adam_step", adamw.kernel_args(
            p, p, p, p, vmax, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01,
            step=3, decoupled=True, maximize=False))


def test_check_args_catches_wrong_widths_counts_and_dtypes():
    x = np.zeros(4, np.float32)
    check_args("softmax", "softmax_forward", (x, x, np.int32(4)))
    with pytest.raises(TypeError, match="parameter 2 \\(int\\) needs numpy.int32, got int"):
        check_args("softmax", "softmax_forward", (x, x, 4))
    with pytest.raises(TypeError, match="3 parameters, 2 arguments"):
        check_args("softmax", "softmax_forward", (x, x))
    with pytest.raises(TypeError, match="needs float32, got float64"):
        check_args("softmax", "softmax_forward", (x, x.astype(np.float64), np.int32(4)))
    with pytest.raises(TypeError, match="unsigned long long.*needs numpy.uint64"):
        check_args("philox", "philox4x32_10", (np.zeros(4, np.uint32), np.int64(1),
                                               np.int64(0), np.uint64(0)))
