"""Errors and warnings of pullback.compiler. Each message names the user's line where it can."""

from __future__ import annotations

from pullback.errors import PullbackError


class CompileError(PullbackError, RuntimeError):
    """A function that cannot be compiled as asked (a RuntimeError, as torch.compile's)."""


class TraceError(CompileError):
    """Something the tracer cannot record: an in-place write it did not see, random numbers,
    an op argument that hides a traced value."""


class DataDependentError(TraceError):
    """Python read a traced tensor's values (``bool(t)``, ``t.item()``, ``t.numpy()``...): the
    control flow that follows depends on data, and a graph replays one path only."""


class GraphBreakWarning(UserWarning):
    """With ``fullgraph=False``, a call that could not be traced runs eagerly (said once)."""


class RecompileWarning(UserWarning):
    """A compiled function reached its cache limit and runs eagerly for new input kinds."""


class ExportError(CompileError):
    """A graph that an exporter (C99, ONNX) cannot write: an op without a rule for it, a dtype
    or a shape it does not handle, a graph that is not pure inference. The message names the op
    and the user's line."""


class OnnxImportError(CompileError):
    """An ONNX model that :func:`pullback.compiler.import_onnx` cannot load: an operator without
    a pullback form, or a form of one it does not handle. The message names the operator, its
    node and the model's opset."""
