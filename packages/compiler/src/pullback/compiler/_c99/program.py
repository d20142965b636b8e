"""A standalone C program around an export: it runs the model on inputs written into it and
prints every output value, optionally timing itself (on a host; a microcontroller build prints
only). The same ``main.c`` is what :mod:`.cortex_m` cross-compiles.

Output lines are ``out <sample> <output> v0 v1 ...`` with ``%.9g`` (nine significant digits
give every float32 back exactly); a timed run adds ``time_ns <per call>`` and
``cpu_time_ns <per call>``: the best of ten blocks of calls (on a shared machine the mean
mostly measures the other jobs).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from pullback._files import write_atomic

from .build import STRICT_FLAGS, compiler, run_compiler_into, sanitizer_flags
from .emitter import ctype_of
from .writer import array_literal

if TYPE_CHECKING:
    from . import CExport

_BLOCKS = 10  # a timed run's calls are timed in this many blocks; the best block counts


@dataclass
class ProgramRun:
    """What a standalone program printed, parsed.

    Attributes:
        outputs: ``outputs[sample][output]``, the arrays it computed.
        time_ns, cpu_time_ns: per call on the first sample (wall and process CPU clock; the
            best of ten blocks of calls), when it was timed.
        executable: the program that ran (an ELF for a microcontroller).
        model_sizes, program_sizes: on a microcontroller, ``arm-none-eabi-size`` of the
            model's object and of the whole program (flash, RAM).
    """

    outputs: list[list[np.ndarray]]
    executable: Path
    time_ns: float | None = None
    cpu_time_ns: float | None = None
    model_sizes: Any = None
    program_sizes: Any = None


def run_parsed(export: CExport, executable: Path, printed: str, samples: int) -> ProgramRun:
    return ProgramRun(parse_outputs(printed, export, samples), executable,
                      parse_time_ns(printed, "wall"), parse_time_ns(printed, "cpu"))


def main_source(export: CExport, samples: Sequence[Sequence[np.ndarray]],
                repeats: int = 0) -> str:
    """``main.c``: run ``export`` on each sample (a tuple of input arrays) and print the
    outputs; with ``repeats`` > 0, time that many calls on the first sample. Its own names all
    begin ``pb_``, which no export's identifier does (see :mod:`.names`)."""
    name = export.name
    lines = []
    if repeats:
        lines += ["#define _POSIX_C_SOURCE 199309L", "#include <time.h>"]
    lines += ["#include <stdio.h>", "#include <stdint.h>", f'#include "{name}.h"', ""]
    for s, sample in enumerate(samples):
        for i, (array, (shape, dtype)) in enumerate(zip(sample, export.inputs)):
            array = np.ascontiguousarray(array, dtype=dtype)
            if array.shape != shape:
                raise ValueError(f"sample {s} input {i} has shape {array.shape}, the export "
                                 f"takes {shape}")
            lines.append(f"static const {ctype_of(dtype)} pb_sample{s}_in{i}[{max(array.size, 1)}]"
                         " = {")
            lines += array_literal(array)
            lines.append("};")
    for j, (shape, dtype) in enumerate(export.outputs):
        size = max(int(np.prod(shape, dtype=np.int64)), 1)
        lines.append(f"static {ctype_of(dtype)} pb_out{j}[{size}];")
    lines += ["", "int main(void) {"]
    out_args = [f"pb_out{j}" for j in range(len(export.outputs))]
    # the one-input one-output form where there is one (name(in, out)), else name_multi
    entry = name if len(export.inputs) == 1 and len(export.outputs) == 1 else f"{name}_multi"
    for s in range(len(samples)):
        in_args = [f"pb_sample{s}_in{i}" for i in range(len(export.inputs))]
        lines.append(f"    {entry}({', '.join(in_args + out_args)});")
        for j, (shape, _) in enumerate(export.outputs):
            size = int(np.prod(shape, dtype=np.int64))
            lines += [f'    printf("out {s} {j}");',
                      f'    for (int pb_i = 0; pb_i < {size}; pb_i++) '
                      f'printf(" %.9g", (double)pb_out{j}[pb_i]);',
                      '    printf("\\n");']
    if repeats:
        in_args = [f"pb_sample0_in{i}" for i in range(len(export.inputs))]
        call = f"{entry}({', '.join(in_args + out_args)});"
        block = max(repeats // _BLOCKS, 1)
        lines += ["    double pb_best = -1.0, pb_best_cpu = -1.0;",
                  f"    {call}  /* warm the caches */",
                  f"    for (int pb_k = 0; pb_k < {_BLOCKS}; pb_k++) {{",
                  "        struct timespec pb_start, pb_stop, pb_cpu_start, pb_cpu_stop;",
                  "        clock_gettime(CLOCK_MONOTONIC, &pb_start);",
                  "        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &pb_cpu_start);",
                  f"        for (int pb_r = 0; pb_r < {block}; pb_r++) {call}",
                  "        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &pb_cpu_stop);",
                  "        clock_gettime(CLOCK_MONOTONIC, &pb_stop);",
                  "        const double pb_ns = ((pb_stop.tv_sec - pb_start.tv_sec) * 1e9 + "
                  f"(pb_stop.tv_nsec - pb_start.tv_nsec)) / {block};",
                  "        const double pb_cpu_ns = ((pb_cpu_stop.tv_sec - pb_cpu_start.tv_sec) * 1e9 + "
                  f"(pb_cpu_stop.tv_nsec - pb_cpu_start.tv_nsec)) / {block};",
                  "        if (pb_best < 0 || pb_ns < pb_best) pb_best = pb_ns;",
                  "        if (pb_best_cpu < 0 || pb_cpu_ns < pb_best_cpu) pb_best_cpu = pb_cpu_ns;",
                  "    }",
                  '    printf("time_ns %.1f\\n", pb_best);',
                  '    printf("cpu_time_ns %.1f\\n", pb_best_cpu);']
    lines += ["    return 0;", "}", ""]
    return "\n".join(lines)


def parse_outputs(text: str, export: CExport, samples: int) -> list[list[np.ndarray]]:
    """The arrays a program printed: ``[sample][output]``."""
    found: dict[tuple[int, int], np.ndarray] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "out":
            s, j = int(parts[1]), int(parts[2])
            shape, dtype = export.outputs[j]
            found[(s, j)] = np.array([float(v) for v in parts[3:]]).astype(dtype).reshape(shape)
    missing = [(s, j) for s in range(samples) for j in range(len(export.outputs))
               if (s, j) not in found]
    if missing:
        raise RuntimeError(f"the program printed no output for (sample, output) {missing}; "
                           f"it printed:\n{text[-2000:]}")
    return [[found[(s, j)] for j in range(len(export.outputs))] for s in range(samples)]


def parse_time_ns(text: str, clock: str = "wall") -> float | None:
    """The time per call a timed run printed: ``"wall"`` (monotonic clock) or ``"cpu"``
    (the process's CPU time, steadier on a busy machine)."""
    key = "time_ns" if clock == "wall" else "cpu_time_ns"
    for line in text.splitlines():
        if line.split()[:1] == [key]:
            return float(line.split()[1])
    return None


def build_native_program(export: CExport, samples: Sequence[Sequence[np.ndarray]],
                         out_dir: str | Path, repeats: int = 0,
                         flags: Sequence[str] = STRICT_FLAGS, openmp: bool = False) -> Path:
    """Write ``main.c`` and compile it with the export into an executable (host compiler)."""
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler: set $CC or install gcc")
    folder = Path(out_dir)
    main = folder / f"{export.name}_main.c"
    write_atomic(main, main_source(export, samples, repeats), sync=False)
    return run_compiler_into(
        [cc, *flags, *(["-fopenmp"] if openmp else []), *sanitizer_flags(None),
         f"-I{export.source.parent}", str(main), str(export.source), "-lm"],
        folder / f"{export.name}_main", f"compiling {main.name}")


def run_program(path: Path, timeout: float = 300) -> str:
    """Run an executable; its standard output (a RuntimeError with stderr if it fails)."""
    done = subprocess.run([str(path)], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{path.name} exited with {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout
