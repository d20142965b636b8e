"""One fuzz case of the native max pooling forward or backward (``pullback/nn/_ops/pool.py``'s
``native_max_pool2d`` and ``native_max_pool2d_backward``, over ``_csrc/pool.c``) against the
NumPy kernel, run in a worker process by ``test_pool_native.py`` (see
:mod:`pullback.testing.isolation`): a crash there is a failing case, not a dead pytest.

A case is a window case of ``test_native_fuzz.py`` (shape, geometry, dtype, layout, seed). For
valid arguments (``nn_native_fuzz_cases``'s independent oracle of PyTorch's rules) the native
result, or ``NotImplemented``, must equal the NumPy kernel's: the forward's exactly, the
backward's to float32 rounding (overlapping windows add in another order); for invalid ones
both must refuse with a typed pullback error.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).parent) not in sys.path:  # the worker loads this file by its path
    sys.path.insert(0, str(Path(__file__).parent))

import pullback.nn  # noqa: E402,F401 - registers the ops
from nn_native_fuzz_cases import (_compare, _geometry_valid, _outcome, _pairs,  # noqa: E402
                                  make_array)
from pullback.nn._ops import pool  # noqa: E402

_numpy_forward = pool._max_pool_kernel("nn.max_pool2d")(np).__wrapped__
_numpy_backward = pool._max_pool_backward_kernel("nn.max_pool2d_backward")(np).__wrapped__


def _geometry(case: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    kernel, stride, padding, dilation, out_hw = _pairs(case)
    return dict(kernel_size=kernel, stride=stride, padding=padding, dilation=dilation), out_hw


def _backward(case: dict[str, Any]) -> str | None:
    geo, out_hw = _geometry(case)
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    n, c = x.shape[:2]
    pooled_shape = [n, c, *out_hw]
    if any(not 0 <= s <= 2 ** 16 for s in out_hw) or np.prod(pooled_shape, dtype=object) > 2 ** 22:
        pooled_shape = [n, c, 1, 1]  # no such array can be made: the geometry disagrees
    valid = _geometry_valid(x.shape, geo["kernel_size"], geo["stride"],
                            geo["padding"], geo["dilation"], tuple(pooled_shape[2:]))
    valid = valid and x.dtype.kind in "fiu"
    if valid and tuple(pooled_shape[2:]) == tuple(out_hw):
        out = _numpy_forward(x, **geo)  # the true maxima, so that gradients land
    else:
        out = make_array(pooled_shape, case["dtype"], "contiguous", case["seed"] + 1, False)
    g = make_array(pooled_shape, case["dtype"], case["layout"], case["seed"] + 2, False)
    native = _outcome(lambda: pool.native_max_pool2d_backward(g, x, out, **geo))
    fallback = _outcome(lambda: _numpy_backward(g, x, out, **geo))
    return _compare(native, fallback, valid, exact=False)


def _forward(case: dict[str, Any]) -> str | None:
    geo, _ = _geometry(case)  # (the case's pooled size is the backward's, maybe a wrong one)
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    out_hw = []
    for a in range(2):  # the pooled size these windows give, for the oracle to check them
        reach = geo["dilation"][a] * (geo["kernel_size"][a] - 1) + 1
        padded = x.shape[2 + a] + sum(geo["padding"][a])
        out_hw.append((padded - reach) // geo["stride"][a] + 1 if geo["stride"][a] else 0)
    valid = _geometry_valid(x.shape, geo["kernel_size"], geo["stride"], geo["padding"],
                            geo["dilation"], tuple(out_hw)) and x.dtype.kind in "fiu"
    native = _outcome(lambda: pool.native_max_pool2d(x, **geo))
    fallback = _outcome(lambda: _numpy_forward(x, **geo))
    return _compare(native, fallback, valid, exact=True)


KERNELS = {"max_pool2d_backward": _backward, "max_pool2d": _forward}


def run_case(case: dict[str, Any]) -> str | None:
    """Run one case (see the module's docstring)."""
    with np.errstate(all="ignore"):
        return KERNELS[case["entry"]](case)
