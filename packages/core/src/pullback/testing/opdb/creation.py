"""Records of functions without tensor inputs, for their error cases only (``dtypes=()``: no
samples): creation functions and checkpoint loading. Their bad arguments gave a bare
ZeroDivisionError, a message without the values, or a string tensor (issue 14)."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

import numpy as np

import pullback as pb

from ...errors import ArgumentError, CheckpointError, NonNumericDataError
from ._record import ErrorCase, OpRecord


def _no_samples(dtype: np.dtype, rng: np.random.Generator) -> list[Any]:
    return []


def load_with_metadata(structure: Any) -> Any:
    """:func:`pullback.load` of a file whose pullback metadata holds ``structure`` (JSON): the
    header is valid, the structure need not be what :func:`pullback.save` writes."""
    from safetensors.numpy import save_file

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.safetensors")
        save_file({"w": np.ones(2, np.float32)}, path,
                  metadata={"pullback.format": "1", "pullback.structure": json.dumps(structure)})
        return pb.load(path)


_LOAD_MESSAGE = r"load\('.*model\.safetensors'\): malformed pullback metadata"

RECORDS = [
    OpRecord(name="arange", fn=pb.arange, torch=lambda t: t.arange, ops=(), dtypes=(),
             samples=_no_samples, differentiable=False, errors=lambda rng: [
                 ErrorCase((0, 10, 0), ArgumentError,
                           r"arange: step must be nonzero, got arange\(0, 10, 0\)"),
                 ErrorCase((0, 10, -1), ArgumentError,
                           r"arange: the bounds \(0, 10\) and the sign of step -1 are "
                           "inconsistent")]),
    OpRecord(name="randint", fn=pb.randint, torch=lambda t: t.randint, ops=(), dtypes=(),
             samples=_no_samples, differentiable=False, errors=lambda rng: [
                 ErrorCase((5, 2, (3,)), ArgumentError,
                           "randint: low must be less than high, got low=5 >= high=2"),
                 ErrorCase((3, 3, (3,)), ArgumentError, "randint: .*low=3 >= high=3")]),
    OpRecord(name="tensor", fn=pb.tensor, torch=lambda t: t.tensor, ops=(), dtypes=(),
             samples=_no_samples, differentiable=False, errors=lambda rng: [
                 ErrorCase((["a", "b"],), NonNumericDataError,
                           r"tensor\(\): cannot make a tensor of dtype <U1 \(from \['a', 'b'\]"),
                 ErrorCase((["1.5"],), NonNumericDataError,
                           r"tensor\(\): cannot make a tensor of dtype", {"dtype": "float32"},
                           "string-parsed-by-numpy")]),
    OpRecord(name="load", fn=load_with_metadata, torch=None, ops=(), dtypes=(),
             samples=_no_samples, differentiable=False, errors=lambda rng: [
                 ErrorCase(({"__tuple__": 5},), CheckpointError, _LOAD_MESSAGE + ": __tuple__"),
                 ErrorCase(({"__dict__": 7},), CheckpointError, _LOAD_MESSAGE + ": __dict__"),
                 ErrorCase(({"a": {"__dict__": [None]}},), CheckpointError,
                           _LOAD_MESSAGE + r": __dict__ holds \[None\]", label="nested-null"),
                 ErrorCase(({"w": {"__tensor__": None}},), CheckpointError,
                           r"load\('.*model\.safetensors'\): malformed tensor entry")]),
]
