"""``pullback.onnx.export``: ``torch.onnx.export``'s name and arguments over
:func:`pullback.compiler.export_onnx`, which pullback-compiler provides.

Importing this module needs nothing; calling :func:`export` without pullback-compiler installed
is a one-line error naming the distribution to install.

Example:
    >>> import pullback, pullback.nn as nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> pullback.onnx.export(model, (pullback.randn(1, 4),), "mlp.onnx",
    ...                      input_names=["x"], dynamic_axes={"x": {0: "batch"}})  # doctest: +SKIP
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, BinaryIO, Mapping, Sequence

__all__ = ["export"]

# torch.onnx.export arguments that change nothing here: the exporter always folds constants,
# writes initializers and checks the model, and has one (TorchScript-free) path.
_IGNORED = frozenset({"verbose", "do_constant_folding", "dynamo", "training",
                      "operator_export_type", "keep_initializers_as_inputs", "report",
                      "verify", "optimize", "external_data", "custom_opsets"})


def export(model: Any, args: Any, f: str | os.PathLike[str] | BinaryIO, *,
           export_params: bool = True, input_names: Sequence[str] | None = None,
           output_names: Sequence[str] | None = None, opset_version: int | None = None,
           dynamic_axes: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """Write ``model`` (a Module or function) traced on ``args`` as an ONNX file, as
    ``torch.onnx.export``.

    Args:
        model: the Module or function (traced in eval mode without gradients).
        args: the example inputs: a Tensor or a tuple of them.
        f: the file name, or a binary file object open for writing.
        export_params: must be True (weights are always stored in the model).
        input_names, output_names: the graph's input and output names.
        opset_version: the ONNX opset (17 to 21; default 17).
        dynamic_axes: as PyTorch's, ``{name: {0: "batch"}}`` or ``{name: [0]}``; only the
            first axis can be dynamic. Without it every size is fixed, as in PyTorch.
        options: the other ``torch.onnx.export`` arguments that change nothing here
            (``verbose``, ``do_constant_folding``, ``dynamo``, ...).

    Returns:
        The ``onnx.ModelProto`` that was written.

    Raises:
        MissingPackageError: pullback-compiler is not installed.
        ValueError: an axis other than the first is dynamic, ``export_params=False``.
        TypeError: an argument ``torch.onnx.export`` does not have.
    """
    unknown = sorted(set(options) - _IGNORED)
    if unknown:
        raise TypeError(f"pullback.onnx.export: unexpected argument(s) {', '.join(unknown)}")
    if not export_params:
        raise ValueError("pullback.onnx.export: export_params=False is not supported (the "
                         "weights are always stored in the model)")
    export_onnx = _exporter()
    dynamic = _dynamic_batch(dynamic_axes)
    kwargs: dict[str, Any] = {"dynamic_batch": dynamic, "input_names": input_names,
                              "output_names": output_names}
    if opset_version is not None:
        kwargs["opset"] = opset_version
    if not hasattr(f, "write"):
        return export_onnx(model, args, os.fspath(f), **kwargs)
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.onnx")
        proto = export_onnx(model, args, path, **kwargs)
        with open(path, "rb") as written:
            f.write(written.read())
    return proto


def _exporter() -> Any:
    from pullback._install_hint import require_distribution

    require_distribution("pullback-compiler", "pullback.onnx.export")
    from pullback.compiler import export_onnx  # type: ignore[import-untyped,import-not-found,unused-ignore]

    return export_onnx


def _dynamic_batch(dynamic_axes: Mapping[str, Any] | None) -> bool:
    """Whether ``dynamic_axes`` asks for a dynamic batch axis (and only for that)."""
    if not dynamic_axes:
        return False
    for name, axes in dynamic_axes.items():
        indices = list(axes.keys()) if isinstance(axes, Mapping) else list(axes)
        if any(int(axis) != 0 for axis in indices):
            raise ValueError(f"pullback.onnx.export: dynamic_axes[{name!r}] = {axes!r}; only the "
                             "first (batch) axis can be dynamic")
    return True
