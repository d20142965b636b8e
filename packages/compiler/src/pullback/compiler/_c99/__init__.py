"""``export_c``: a trained network as one self-contained C99 file pair, for any C compiler down
to a microcontroller's (no runtime, no allocation, nothing but libm).

See :func:`export_c`; the parts: :mod:`.emitter` (kernels and where values live), the op rules
(:mod:`.linalg`, :mod:`.conv`, :mod:`.window`, :mod:`.normalize`, :mod:`.layout`,
:mod:`.elementwise`), :mod:`.arena` (the static memory plan), :mod:`.names` (identifiers),
:mod:`.writer` (the text), :mod:`.build` (compiling and loading it), :mod:`.program` and
:mod:`.cortex_m` (a standalone program, natively and on an emulated Cortex-M4).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pullback._files import write_atomic

from .._export import EXPORT_PIPELINE, inference_graph
from .._ir import Graph
from . import cortex_m, program
from .build import STRICT_FLAGS, CLibrary, build_shared
from .emitter import Emitter
from .names import Namer, c_identifier
from .program import ProgramRun
from .writer import header_text, source_text

# the export pipeline, then the elementwise chains as fused loops and products with their
# activation in one kernel, in place
EXPORT_C_PIPELINE: tuple[str, ...] = EXPORT_PIPELINE + ("fuse_elementwise", "dce",
                                                        "matmul_epilogue")

Signature = list[tuple[tuple[int, ...], np.dtype]]


@dataclass
class CExport:
    """What :func:`export_c` wrote.

    Attributes:
        name: the entry point's C identifier (``name(in, out)``, ``name_multi(...)``).
        header, source: the two files.
        inputs, outputs: ``(shape, dtype)`` of each array the entry point takes and fills.
        arena_bytes: the static activation arena; ``naive_bytes`` what one buffer per
            intermediate value would take.
        weight_bytes: the static constant arrays.
        kernels: how many kernel functions the file has.
        graph: the optimized inference graph that was written.
    """

    name: str
    header: Path
    source: Path
    inputs: Signature
    outputs: Signature
    arena_bytes: int
    naive_bytes: int
    weight_bytes: int
    kernels: int
    graph: Graph = field(repr=False)

    def build(self, target: str | Path | None = None, openmp: bool = False,
              sanitize: str | None = None, flags: Sequence[str] = STRICT_FLAGS) -> Path:
        """Compile into a shared library (default ``lib<name>.so`` next to the source) with
        ``flags`` (default ``-std=c99 -O2 -Wall -Wextra -Werror -pedantic``), ``-fopenmp``
        when asked, and the sanitizers of ``sanitize`` (default
        ``$PULLBACK_NATIVE_SANITIZE``)."""
        suffix = ("_omp" if openmp else "") + ("_san" if sanitize else "")
        path = Path(target) if target is not None else \
            self.source.with_name(f"lib{self.name}{suffix}.so")
        return build_shared(self.source, path, flags, openmp, sanitize)

    def load(self, **build_options: Any) -> CLibrary:
        """Build (see :meth:`build`) and load with ctypes: ``library(*arrays)`` returns the
        outputs as NumPy arrays."""
        return CLibrary(self.build(**build_options), self.name, self.inputs, self.outputs)

    def run_native(self, samples: Sequence[Sequence[np.ndarray]], repeats: int = 0,
                   flags: Sequence[str] = STRICT_FLAGS, openmp: bool = False) -> ProgramRun:
        """Compile a standalone program (``<name>_main.c`` next to the source: the samples
        are static arrays in it, the outputs printed) with the host compiler, run it, and
        parse what it printed. ``samples[s][i]`` is input ``i`` of sample ``s``; with
        ``repeats`` > 0 the program also times that many calls on the first sample."""
        exe = program.build_native_program(self, samples, self.source.parent, repeats, flags,
                                           openmp)
        return program.run_parsed(self, exe, program.run_program(exe), len(samples))

    def run_cortex_m4(self, samples: Sequence[Sequence[np.ndarray]],
                      out_dir: str | Path | None = None) -> ProgramRun:
        """The same program cross-compiled for a Cortex-M4F (``arm-none-eabi-gcc``, newlib)
        and run on QEMU's MPS2-AN386 board, printing through semihosting; the result has the
        model's and the program's flash and RAM. A RuntimeError says what is missing when the
        tools are not installed (see :func:`cortex_m4_unavailable`)."""
        why = cortex_m.unavailable()
        if why is not None:
            raise RuntimeError(f"the Cortex-M4 target is unavailable: {why}")
        folder = Path(out_dir) if out_dir is not None else self.source.parent / "cortex_m4"
        built = cortex_m.build(self, samples, folder)
        run = program.run_parsed(self, built.elf, cortex_m.run(built.elf), len(samples))
        run.model_sizes, run.program_sizes = built.model, built.program
        return run


def cortex_m4_unavailable() -> str | None:
    """Why :meth:`CExport.run_cortex_m4` cannot run here (a missing tool and the Debian
    packages that have it), or None when it can."""
    return cortex_m.unavailable()


def export_c(module_or_graph: Any, example_inputs: Any, out_dir: str | Path,
             name: str = "model") -> CExport:
    """Write a model as C99: ``<name>.h`` and ``<name>.c``, self-contained.

    The model is traced in eval mode without gradients on ``example_inputs`` (their shapes are
    the ones the C takes), its weights frozen into ``static const`` arrays, batch norm folded
    into the convolutions, elementwise chains fused, and its activations placed in one static
    arena planned by liveness. The entry points:

    * ``void name(const float *restrict in, float *restrict out)`` for one input and one
      output (the element types follow the model: ``int64_t`` token ids for a GPT);
    * ``void name_multi(const float *restrict in0, ..., float *restrict out0, ...)`` always.

    The file compiles with ``gcc -std=c99 -O2 -Wall -Wextra -Werror -pedantic`` (with or
    without ``-fopenmp``) and needs ``-lm`` only: no allocation, no other library.

    Args:
        module_or_graph: a Module, a function, or a Graph from :func:`pullback.compiler.trace`
            (traced without gradients).
        example_inputs: a Tensor or a tuple of them (ignored for a Graph).
        out_dir: the folder to write to (made if missing).
        name: the entry point's name; any text (it is made a valid C identifier, which also
            names the files).

    Returns:
        A :class:`CExport` (paths, input and output shapes, arena and weight sizes);
        ``.load()`` compiles it and returns a callable.

    Raises:
        ExportError: an op without a C99 rule (the message names it and the user's line), a
            dtype C does not have, a graph that is not inference.

    Example:
        >>> import pullback as pb, pullback.nn as nn, pullback.compiler as pc
        >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> export = pc.export_c(model, pb.randn(1, 4), "build", name="mlp")  # doctest: +SKIP
        >>> export.load()(x.numpy())  # doctest: +SKIP
    """
    graph = inference_graph(module_or_graph, example_inputs, EXPORT_C_PIPELINE)
    identifier = c_identifier(name, "model")
    namer = Namer()
    namer.reserve(identifier)
    namer.reserve(f"{identifier}_multi")
    emitter = Emitter(graph, identifier, namer)
    emitter.build()
    source, weight_bytes = source_text(identifier, graph, emitter)
    header = header_text(identifier, graph, emitter, weight_bytes)
    folder = Path(out_dir)  # the folder the user named (a link to one is theirs to make)
    folder.mkdir(parents=True, exist_ok=True)
    header_path, source_path = folder / f"{identifier}.h", folder / f"{identifier}.c"
    write_atomic(header_path, header, sync=False)
    write_atomic(source_path, source, sync=False)
    return CExport(identifier, header_path, source_path,
                   [(ph.value.shape, ph.value.dtype) for ph in graph.placeholders],
                   [(v.shape, v.dtype) for v in graph.outputs],
                   emitter.arena_bytes(), emitter.naive_bytes(), weight_bytes,
                   len(emitter.kernels), graph)
