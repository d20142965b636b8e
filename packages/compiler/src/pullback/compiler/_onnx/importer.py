"""``import_onnx``: an ONNX model as a pullback Module that runs and trains.

The model's float initializers become Parameters (trainable, in ``state_dict`` under their
ONNX names with ``.`` and other characters a Module name cannot hold replaced), its other
initializers (integers, batch norm's running statistics) constant Tensors. The graph is
checked and ordered when it is imported (:class:`.program.Program`); ``forward`` runs its
nodes with pullback's ops (:mod:`.import_ops`): autograd records them as any eager forward,
so ``loss.backward()`` and an optimizer step work, and :func:`pullback.compiler.compile` can
capture it.

What the importer reads: the model (a path, bytes or an ``onnx.ModelProto``) and, for
tensors stored outside it, files below the folder the caller names (:mod:`.external_data`).
It never executes anything from the file, and never writes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

import pullback as pb
import pullback.nn as nn
from pullback.tensor import Tensor

from .._export import distinct
from ..errors import OnnxImportError
from .external_data import load_external_data, open_regular
from .import_ops import FIXED_INPUTS
from .program import Program
from .tensors import array_from_proto

MAX_MODEL_BYTES = 2 ** 31  # protobuf's own limit for one message


def _read_model_file(path: Path) -> bytes:
    with open_regular(path, "the model") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_MODEL_BYTES:
            raise OnnxImportError(f"import_onnx: {str(path)!r} is {size} bytes, over "
                                  "protobuf's 2 GiB (keep large weights as external data)")
        return f.read(MAX_MODEL_BYTES + 1)


def _parse(data: bytes, source: str) -> Any:
    from onnx import ModelProto

    model = ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # noqa: BLE001  (protobuf's DecodeError and its kin)
        raise OnnxImportError(f"import_onnx: {source} is not an ONNX model ({exc})") from None
    return model


def load_model(model: Any, base_dir: str | os.PathLike[str] | None) -> Any:
    """The ModelProto to import (a copy: the caller's is never changed), its external data
    read from below ``base_dir`` (a path's own folder when not given)."""
    from . import _onnx

    onnx = _onnx()
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        proto = _parse(_read_model_file(path), repr(str(path)))
        base_dir = path.resolve().parent if base_dir is None else base_dir
    elif isinstance(model, (bytes, bytearray, memoryview)):
        proto = _parse(bytes(model), "the bytes given")
    elif isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
    else:
        raise TypeError(f"import_onnx: expected a path, bytes or an onnx.ModelProto, got "
                        f"{type(model).__name__}")
    load_external_data(proto, base_dir)
    return proto


def _opsets(proto: Any) -> dict[str, int]:
    opsets = {}
    for entry in proto.opset_import:
        domain = "" if entry.domain in ("", "ai.onnx") else entry.domain
        opsets[domain] = int(entry.version)
    opsets.setdefault("", 1)  # the first IR versions had no opset_import: opset 1
    return opsets


class OnnxModule(nn.Module):
    """An imported ONNX graph (see :func:`pullback.compiler.import_onnx`).

    Attributes:
        opset: the model's ai.onnx opset.
        input_names, output_names: the graph's inputs (initializers excluded) and outputs.
    """

    def __init__(self, proto: Any) -> None:
        super().__init__()
        graph = proto.graph
        opsets = _opsets(proto)
        self.opset = opsets.get("", 0)
        self._slots: dict[str, str] = {}
        used: set[str] = set()
        fixed = {n.input[i] for n in graph.node for i in FIXED_INPUTS.get(n.op_type, ())
                 if i < len(n.input)}
        for init in graph.initializer:
            if init.name in self._slots:
                raise OnnxImportError(f"import_onnx: two initializers are named {init.name!r}")
            array = array_from_proto(init, f"initializer {init.name!r}")
            if array.dtype.kind == "f" and init.name not in fixed:
                slot = _slot(init.name, used)
                self.register_parameter(slot, nn.Parameter(pb.tensor(array)))
                self._slots[init.name] = slot
        self._program = Program(graph, opsets, parameters=self._slots)
        self.input_names = self._program.input_names
        self.output_names = self._program.output_names

    def forward(self, *inputs: Any) -> Any:
        """The graph's outputs for ``inputs`` (Tensors, arrays or lists for sequence inputs,
        in the graph's input order): one, or a tuple of several."""
        if len(inputs) != len(self.input_names):
            raise TypeError(f"the ONNX model takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        env: dict[str, Any] = {name: getattr(self, slot) for name, slot in self._slots.items()}
        for name, x in zip(self.input_names, inputs):
            env[name] = _as_value(x)
        results = self._program.run(env, run_subgraph)
        return results[0] if len(results) == 1 else tuple(results)


def _as_value(x: Any) -> Any:
    if x is None or isinstance(x, Tensor):
        return x
    if isinstance(x, list):
        return [_as_value(v) for v in x]
    return pb.tensor(np.asarray(x))


def run_subgraph(program: Program, inputs: list[Any], scope: dict[str, Any]) -> list[Any]:
    """Run a control-flow body: the enclosing graph's values visible, ``inputs`` bound to the
    body's inputs."""
    env = dict(scope)
    env.update(zip(program.input_names, inputs))
    return program.run(env, run_subgraph)


def import_onnx(model: Any, *, base_dir: str | os.PathLike[str] | None = None) -> OnnxModule:
    """Load an ONNX model as a pullback Module.

    Args:
        model: a path to an ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
        base_dir: the folder that tensors stored outside the model (ONNX's external data)
            are read from; only files below it are read. Defaults to the model file's
            folder for a path; a model given as bytes or a ModelProto reads no external data
            unless it is given.

    Returns:
        An ``nn.Module`` whose ``forward(*inputs)`` takes the graph's inputs (Tensors or
        arrays, in the graph's order) and returns its output, or a tuple when there are
        several. Its float initializers are Parameters: it trains.

    Raises:
        OnnxImportError: a file that is not a valid model (a cycle, a value read before any
            node writes it, an output nothing produces, a tensor whose data does not match
            its dims, external data outside ``base_dir``...) or an operator without a
            pullback form; the message names the node, tensor or file.
        ImportError: the ``onnx`` package is not installed.

    Example:
        >>> net = pc.import_onnx("mlp.onnx")  # doctest: +SKIP
        >>> net(pb.randn(8, 4)).sum().backward()  # doctest: +SKIP
    """
    return OnnxModule(load_model(model, base_dir))


def _slot(name: str, used: set[str]) -> str:
    """A Module attribute name for an initializer (``0.weight`` -> ``p_0_weight``), distinct."""
    base = re.sub(r"\W", "_", name) or "initializer"
    if base[0].isdigit():
        base = "p_" + base
    return distinct(base, used)
