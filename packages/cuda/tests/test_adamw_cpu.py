"""The fused AdamW entry point on a machine without a GPU: it says which argument it cannot take
and never pretends to have updated anything."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
import pullback.cuda
from pullback.cuda._kernels.adamw import unsupported_reason
from pullback.errors import DeviceError


def _cpu_state():
    p = pb.zeros(4)
    return p, np.ones(4, np.float32), pb.zeros(4), pb.zeros(4)


def test_cpu_tensors_are_not_supported_and_the_reason_names_the_argument():
    p, g, m, v = _cpu_state()
    assert unsupported_reason(p, g, m, v) == "param is a ndarray, not a CUDA array"
    assert not pullback.cuda.fused_adamw_supported(p, g, m, v)


def test_calling_it_anyway_is_a_device_error_and_changes_nothing():
    p, g, m, v = _cpu_state()
    with pytest.raises(DeviceError, match="fused_adamw_: param is a ndarray, not a CUDA array"):
        pullback.cuda.fused_adamw_(p, g, m, v, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8,
                                   weight_decay=0.01, step=1)
    np.testing.assert_array_equal(p.numpy(), np.zeros(4, np.float32))


def test_no_module_under_src_imports_torch():
    from pathlib import Path

    src = Path(pullback.cuda.__file__).parent
    offenders = [str(f) for f in src.rglob("*.py")
                 if "import torch" in f.read_text() or "from torch" in f.read_text()]
    assert offenders == []
