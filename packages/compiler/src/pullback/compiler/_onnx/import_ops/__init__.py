"""What each ONNX operator is in pullback, for :func:`pullback.compiler.import_onnx`.

One table, as onnxruntime's kernel registry and tinygrad's ``nn/onnx.py`` have it: from
``(domain, op_type)`` to the converters of that operator by the opset version each one is
defined since. A converter is a small function of the node's inputs (Tensors, ``None`` for an
omitted optional input, a list for a sequence), its attributes and a :class:`NodeContext`,
returning the node's outputs; it is written with pullback's own differentiable ops, so an
imported model trains. Converters live by family, one module each (:mod:`.elementwise`,
:mod:`.reduce`, :mod:`.shape`, :mod:`.nn`, :mod:`.attention`, :mod:`.recurrent`,
:mod:`.control_flow`, :mod:`.quantization`, :mod:`.loss`, :mod:`.sequence`,
:mod:`.pool`, :mod:`.resize`, :mod:`.indexing`, :mod:`.matmul`, :mod:`.detection`).

A converter raises :class:`NotImplementedError` for a form of its operator it does not handle
(the importer reports it as an ``OnnxImportError`` naming the node); sizes, axes and other
inputs that ONNX passes as tensors are read back as Python ints with :func:`ints`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from pullback.tensor import Tensor

Converter = Callable[[list[Any], dict[str, Any], "NodeContext"], Sequence[Any]]

DEFAULT_DOMAIN = ""
DOMAINS = {"": DEFAULT_DOMAIN, "ai.onnx": DEFAULT_DOMAIN}

# (domain, op_type) -> [(since_version, converter)], ascending
REGISTRY: dict[tuple[str, str], list[tuple[int, Converter]]] = {}


@dataclass
class NodeContext:
    """What a converter may need besides its inputs and attributes."""

    op_type: str
    name: str
    opset: int
    outputs: int  # how many outputs the node names (optional ones may be omitted)
    run_graph: Callable[..., list[Any]] | None = None  # runs a subgraph (control flow)
    scope: dict[str, Any] = field(default_factory=dict)  # the values visible to a subgraph


def converter(*op_types: str, since: int = 1, domain: str = DEFAULT_DOMAIN
              ) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of ``op_types`` from opset ``since``
    on (until a later registration of the same operator takes over)."""
    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            versions = REGISTRY.setdefault((domain, op_type), [])
            versions.append((since, fn))
            versions.sort(key=lambda entry: entry[0])
        return fn
    return register


def lookup(domain: str, op_type: str, opset: int) -> Converter | None:
    """The converter for ``op_type`` of ``domain`` in a model of ``opset`` (the latest one
    defined at or before that opset), or None."""
    versions = REGISTRY.get((DOMAINS.get(domain, domain), op_type), [])
    found = None
    for since, fn in versions:
        if since <= opset:
            found = fn
    return found


def supported() -> list[str]:
    """The operators the importer reads, as ``op_type`` (``domain:op_type`` outside ai.onnx)."""
    return sorted(op if domain == DEFAULT_DOMAIN else f"{domain}:{op}"
                  for domain, op in REGISTRY)


def ints(t: Any) -> list[int]:
    """A tensor of sizes or axes (or a list of ints) as Python ints."""
    array = t.detach().numpy() if isinstance(t, Tensor) else t
    return [int(v) for v in np.asarray(array).reshape(-1)]


def floats(t: Any) -> list[float]:
    """A tensor of scales (or a list) as Python floats."""
    array = t.detach().numpy() if isinstance(t, Tensor) else t
    return [float(v) for v in np.asarray(array).reshape(-1)]


def scalar(t: Any) -> Any:
    """A one-element tensor as a Python number (None stays None)."""
    if t is None:
        return None
    return t.detach().numpy().reshape(-1)[0].item() if isinstance(t, Tensor) else t


def optional(ins: list[Any], i: int) -> Any:
    """The ``i``-th input, or None where it is omitted."""
    return ins[i] if len(ins) > i else None


def text(value: Any) -> str:
    """A string attribute (the onnx helper returns bytes)."""
    return value.decode() if isinstance(value, bytes) else str(value)


# the inputs of these operators that are statistics, not weights (import_onnx keeps them fixed)
FIXED_INPUTS = {"BatchNormalization": (3, 4)}

from . import (  # noqa: E402,F401  (each family registers its converters)
    attention, control_flow, detection, elementwise, indexing, loss, matmul, nn, pool, quantization,
    recurrent, reduce, resize, sequence, shape)
