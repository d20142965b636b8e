"""Fuzzing nn's native kernels (im2col, col2im, softmax, layer norm, log-softmax and
cross-entropy with their backwards, the LSTM layer's time loops, attention forward and backward)
through their entry points, each case in a worker process (``pullback.testing.isolation``): a
crash fails the case and says which, instead of killing pytest.

Hypothesis draws shapes, memory layouts (transposed, strided, reversed, broadcast), dtypes,
special values, and for the window kernels strides, dilations, paddings and output sizes that
are zero, negative, huge or wrong. ``nn_native_fuzz_cases.run_case`` compares each result with
the NumPy fallback, and checks that invalid arguments are refused with a typed error.

The same cases run a second time, fewer of them, on kernels built with
``-fsanitize=address,undefined`` (an out-of-bounds access or undefined behaviour there aborts
the worker); that part skips, saying why, where the compiler has no sanitizers. Without a
compiler (or with ``PULLBACK_NATIVE=0``) the entry points return ``NotImplemented`` and only
their checks are fuzzed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import strategies as st  # noqa: E402

from pullback.testing.isolation import Workers, fuzz_in_isolation  # noqa: E402

CASES_FILE = Path(__file__).with_name("nn_native_fuzz_cases.py")
KERNELS = ("im2col", "col2im", "softmax", "softmax_backward", "layer_norm", "layer_norm_backward",
           "log_softmax", "cross_entropy", "lstm", "attention")
CASES_PER_KERNEL = 2000
SANITIZED_CASES_PER_KERNEL = 200
# Kernels whose row loops hold no index arithmetic beyond the row's own (log-softmax and
# cross-entropy share softmax's), fuzzed with fewer cases to keep the folder's time.
FEWER_CASES = {"log_softmax": 800, "cross_entropy": 800, "lstm": 400, "attention": 300}

# -- strategies --------------------------------------------------------------------------------

HUGE = [2 ** 31, 2 ** 62, 2 ** 63 - 1, 2 ** 63, -(2 ** 31), -(2 ** 63)]
layouts = st.sampled_from(["contiguous", "contiguous", "transposed", "strided", "reversed",
                           "broadcast"])
dtypes = st.sampled_from(["float32"] * 6 + ["float64", "float16", "int32"])
seeds = st.integers(0, 2 ** 31 - 1)


def _geometry_value(low: int, high: int, hostile: bool) -> st.SearchStrategy[int]:
    """``low..high``; in a hostile case also 0, negatives and huge values (one integer draw
    each: Hypothesis's time goes into draws; codes below -2 stand for the huge values)."""
    if not hostile:
        return st.integers(low, high)
    return st.integers(-2 - len(HUGE), high).map(lambda v: HUGE[-3 - v] if v < -2 else v)


@st.composite
def window_case(draw: Any, kernel_name: str) -> dict[str, Any]:
    n, c = draw(st.integers(0, 3)), draw(st.integers(1, 4))
    h, w = draw(st.integers(0, 24)), draw(st.integers(0, 24))
    if draw(st.booleans()):  # large enough for the native path (1,024 elements)
        n, c, h, w = max(n, 1), max(c, 2), max(h, 16), max(w, 16)
    hostile = draw(st.integers(0, 9)) < 4  # else every value is one PyTorch accepts

    def pair(low: int, high: int) -> list[int]:
        value = _geometry_value(low, high, hostile)
        return [draw(value), draw(value)]

    kernel, stride, dilation = pair(1, 5), pair(1, 4), pair(1, 3)
    padding = [pair(0, 3), pair(0, 3)]
    out_hw = []
    for a, size in enumerate((h, w)):
        try:
            out = (size + padding[a][0] + padding[a][1] - dilation[a] * (kernel[a] - 1) - 1) \
                // stride[a] + 1
        except ZeroDivisionError:
            out = 1
        out_hw.append(out)
    off = draw(st.sampled_from([(0, 0)] * 6 + [(1, 0), (0, -1), (-1, 2)]))  # a wrong out_hw
    seed = draw(seeds)
    return {"entry": kernel_name, "shape": [n, c, h, w], "kernel": kernel, "stride": stride,
            "padding": padding, "dilation": dilation,
            "out_hw": [out_hw[0] + off[0], out_hw[1] + off[1]],
            "dtype": draw(dtypes), "layout": draw(layouts), "seed": seed // 2,
            "special": bool(seed % 2)}


@st.composite
def rows_shape(draw: Any) -> list[int]:
    ndim = draw(st.integers(0, 3))
    shape = [draw(st.integers(0, 12)) for _ in range(ndim)]
    if ndim and draw(st.booleans()):  # large enough for the native path (1,024 elements)
        shape[-1] = max(shape[-1], draw(st.sampled_from([1, 15, 16, 17, 64, 257, 1031])))
        if len(shape) > 1:
            shape[0] = max(shape[0], 1024 // (shape[-1] * max(1, math.prod(shape[1:-1]))) + 1)
    return shape


@st.composite
def rows_case(draw: Any, kernel_name: str) -> dict[str, Any]:
    # Only the arguments the entry point takes are drawn: each draw costs Hypothesis time.
    shape = draw(rows_shape())
    if kernel_name == "cross_entropy" and draw(st.integers(0, 3)):  # mostly (N, C) logits
        cols = draw(st.sampled_from([1, 15, 16, 17, 64, 257, 1031]))
        shape = [max(draw(st.integers(1, 40)), 1024 // cols + 1), cols]
    two_inputs = kernel_name.endswith("backward") or kernel_name == "log_softmax"
    other = draw(st.one_of(st.just(shape), rows_shape())) if two_inputs else shape
    ndim = max(len(shape), 1)
    case = {"entry": kernel_name, "shape": shape, "other_shape": other,
            "dtype": draw(dtypes), "layout": draw(layouts),
            "other_layout": draw(layouts) if two_inputs else "contiguous",
            "seed": draw(seeds), "special": draw(st.booleans())}
    if kernel_name.startswith("softmax"):
        case["axis"] = draw(st.one_of(st.just(-1), st.integers(-ndim - 1, ndim)))
    if kernel_name == "softmax":
        case.update(scale=draw(st.sampled_from([1.0, 0.37, -1.5, 0.0, 1e30])),
                    causal=draw(st.booleans()), in_place=draw(st.booleans()))
    if kernel_name == "log_softmax":
        case["axis"] = draw(st.one_of(st.just(-1), st.integers(-ndim - 1, ndim)))
    if kernel_name == "cross_entropy":
        case.update(targets=draw(st.sampled_from(["valid"] * 3 + ["out_of_range"])),
                    target_dtype=draw(st.sampled_from(["int64", "int64", "int32", "uint8",
                                                       "float32"])),
                    target_rows=draw(st.sampled_from([-1] * 5 + [0, 1])),
                    ignore_index=draw(st.sampled_from([-100, 0, 3])))
    if kernel_name.startswith("layer_norm"):
        case.update(normalized_ndim=draw(st.integers(-1, 3)),
                    w=draw(st.sampled_from(["none", "given", "given", "wrong"])),
                    b=draw(st.sampled_from(["none", "given", "wrong"])),
                    stats=draw(st.sampled_from(["right"] * 4 + ["wrong"])),
                    eps=draw(st.sampled_from([1e-5, 1e-3, 1.0])))
    return case


@st.composite
def lstm_case(draw: Any) -> dict[str, Any]:
    return {"entry": "lstm", "steps": draw(st.integers(0, 5)), "batch": draw(st.integers(0, 6)),
            "hidden": draw(st.sampled_from([1, 3, 16, 17, 40])),
            "wrong": draw(st.sampled_from(["none"] * 6 + ["pre", "h0", "c0", "w_hh_t", "g",
                                                          "c_prev"])),
            "dtype": draw(dtypes), "other_layout": draw(layouts),
            # pre is the op's own contiguous projection: mostly contiguous here too
            "layout": draw(st.sampled_from(["contiguous"] * 4 + ["transposed", "strided"])),
            "reverse": draw(st.booleans()), "seed": draw(seeds), "special": draw(st.booleans())}


@st.composite
def attention_case(draw: Any) -> dict[str, Any]:
    """Batch axes 0 to 3 (broadcast among the operands, or not fitting), lengths and head dims
    from 0 (mostly fitting each other), the weights' shape right or not."""
    batch = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 3)))]
    lengths = st.sampled_from([0, 1, 2, 5, 16, 17, 33])
    length, keys = draw(lengths), draw(lengths)
    dim, value_dim = draw(st.sampled_from([0, 1, 3, 16, 17])), draw(st.sampled_from([1, 3, 16]))

    def lead() -> list[int]:  # the operand's batch axes: all, broadcast ones, fewer, or wrong
        how = draw(st.sampled_from(["same"] * 5 + ["ones", "fewer", "wrong"]))
        if how == "ones":
            return [1] * len(batch)
        if how == "fewer":
            return batch[1:]
        return [b + 1 for b in batch] if how == "wrong" else list(batch)

    off = st.sampled_from([0] * 8 + [1])  # a dimension that does not fit, now and then
    layout = lambda: draw(layouts)  # noqa: E731
    return {"entry": "attention", "q_shape": lead() + [length, dim],
            "k_shape": lead() + [keys, dim + draw(off)],
            "v_shape": lead() + [keys + draw(off), value_dim],
            "g_shape": batch + [length, value_dim + draw(off)],
            "w_shape": batch + [length, keys + draw(off)],
            "q_layout": layout(), "k_layout": layout(), "v_layout": layout(),
            "g_layout": layout(), "dtype": draw(dtypes), "seed": draw(seeds),
            "special": draw(st.booleans()), "causal": draw(st.booleans()),
            "scale": draw(st.sampled_from([0.35, 1.0, -0.7, 0.0, 1e30]))}


def strategy(kernel_name: str) -> st.SearchStrategy[dict[str, Any]]:
    if kernel_name == "attention":
        return attention_case()
    if kernel_name in ("im2col", "col2im"):
        return window_case(kernel_name)
    if kernel_name == "lstm":
        return lstm_case()
    return rows_case(kernel_name)


# -- the runs ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def workers() -> Any:
    pool = Workers(CASES_FILE, "run_case")
    yield pool
    pool.close()


@pytest.mark.parametrize("kernel_name", KERNELS)
def test_entry_point_never_crashes_and_agrees_with_numpy(workers: Any, kernel_name: str) -> None:
    cases = FEWER_CASES.get(kernel_name, CASES_PER_KERNEL)
    ran = fuzz_in_isolation(workers.get("plain"), strategy(kernel_name), cases)
    assert ran >= cases


@pytest.mark.parametrize("kernel_name", KERNELS)
def test_entry_point_under_address_and_undefined_behaviour_sanitizers(workers: Any,
                                                                      kernel_name: str) -> None:
    cases = min(FEWER_CASES.get(kernel_name, CASES_PER_KERNEL), SANITIZED_CASES_PER_KERNEL)
    ran = fuzz_in_isolation(workers.get("sanitized", pytest.skip), strategy(kernel_name), cases)
    assert ran >= cases
