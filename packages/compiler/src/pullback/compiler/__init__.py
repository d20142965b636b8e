"""pullback.compiler: graph capture, optimization passes and compiled execution.

* :func:`trace` records what a function (or Module) does, its backward and optimizer step
  included, into a typed SSA :class:`Graph`.
* :func:`compile` returns a callable that traces once per kind of input (guards) and replays the
  optimized graph with no per-op Python dispatch.
* :mod:`pullback.compiler.passes`: the registered graph passes and :func:`optimize`.
* :func:`gemm_provider` says which library computes compiled programs' matrix products: core's
  GEMM provider, eager's too (MKL where the ``mkl`` wheel is installed, else NumPy).
* :func:`export_c` writes a model as self-contained C99 (down to a microcontroller);
  :func:`export_onnx` as an ONNX file, and :func:`import_onnx` loads one as a Module.
"""

from pullback.plugins import ensure_registered as _ensure_registered

from ._c99 import CExport, ProgramRun, cortex_m4_unavailable, export_c
from ._capture import trace
from ._compiled import CompiledFunction, compile
from ._executor import lower, run_graph
from ._format import to_dot
from ._gemm import provider as gemm_provider
from ._ir import Graph, Node, Placeholder, Value
from ._onnx import export_onnx
from ._onnx.importer import import_onnx
from .errors import (CompileError, DataDependentError, ExportError, GraphBreakWarning,
                     OnnxImportError, RecompileWarning, TraceError)
from .passes import optimize

_ensure_registered("pullback.compiler._plugin", "compiler", "pullback-compiler")

__all__ = [
    "CExport", "CompileError", "CompiledFunction", "DataDependentError", "ExportError", "Graph",
    "GraphBreakWarning", "Node", "OnnxImportError", "Placeholder", "ProgramRun",
    "RecompileWarning", "TraceError", "Value", "compile", "cortex_m4_unavailable", "export_c",
    "export_onnx", "gemm_provider", "import_onnx", "lower", "optimize", "run_graph", "to_dot",
    "trace",
]

