"""Fuzzing core's native kernels (GELU, its derivative, ReLU's derivative, the leading-axis sum,
an embedding's gradient)
through their entry points, each case in a worker process (``pullback.testing.isolation``): a
crash fails the case and names it instead of killing pytest. Hypothesis draws shapes (around the 1,024-element
threshold of the native path, and mismatched between the two inputs), dtypes, memory layouts
(transposed, strided, reversed, broadcast) and special values; ``core_native_fuzz_cases`` compares
each result with the op's NumPy kernel. The same cases run again, fewer, on kernels built with
``-fsanitize=address,undefined`` (skipped, saying why, where the compiler has none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis")
from hypothesis import strategies as st  # noqa: E402

from pullback.testing.isolation import Workers, fuzz_in_isolation  # noqa: E402
from pullback.testing.layouts import LAYOUTS  # noqa: E402

CASES_FILE = Path(__file__).with_name("core_native_fuzz_cases.py")
ENTRIES = ("gelu", "gelu_backward", "relu_backward", "sum_leading_axis", "take_scatter_add")
CASES_PER_KERNEL = 2000
SANITIZED_CASES_PER_KERNEL = 200

# Small shapes (0-d, empty, a few elements) and shapes at the native path's 1,024-element
# threshold, with vector remainders (1,031) and rows (4 x 257): at most ~16k elements.
_SIZES = st.sampled_from([1, 2, 31, 32, 33, 257, 1023, 1024, 1025, 1031, 4099])
shapes = st.one_of(
    st.lists(st.integers(0, 12), max_size=3),
    st.lists(_SIZES, min_size=1, max_size=1),
    st.tuples(st.integers(1, 4), _SIZES).map(list),
)


@st.composite
def case(draw: Any, entry: str) -> dict[str, Any]:
    x_shape = draw(shapes)
    return {"entry": entry, "x_shape": x_shape,
            "g_shape": x_shape if draw(st.integers(0, 4)) else draw(shapes),
            "x_layout": draw(st.sampled_from(LAYOUTS)), "g_layout": draw(st.sampled_from(LAYOUTS)),
            "dtype": draw(st.sampled_from(["float32"] * 5 + ["float64", "float16"])),
            "approximate": draw(st.sampled_from(["none", "none", "tanh"])),
            "seed": draw(st.integers(0, 2 ** 31 - 1)), "special": draw(st.booleans()),
            "axis": draw(st.sampled_from([0, 0, (0,), -1, 1, None])),
            "keepdims": draw(st.booleans())}


@pytest.fixture(scope="module")
def workers() -> Any:
    pool = Workers(CASES_FILE, "run_case")
    yield pool
    pool.close()


@pytest.mark.parametrize("entry", ENTRIES)
def test_entry_point_never_crashes_and_agrees_with_numpy(workers: Any, entry: str) -> None:
    assert fuzz_in_isolation(workers.get("plain"), case(entry), CASES_PER_KERNEL) >= CASES_PER_KERNEL


@pytest.mark.parametrize("entry", ENTRIES)
def test_entry_point_under_address_and_undefined_behaviour_sanitizers(workers: Any,
                                                                      entry: str) -> None:
    ran = fuzz_in_isolation(workers.get("sanitized", pytest.skip), case(entry), SANITIZED_CASES_PER_KERNEL)
    assert ran >= SANITIZED_CASES_PER_KERNEL
