"""The op database itself: every op core registers has a record, every record exercises the
ops it claims, ids are unique and honest, and nothing in pullback.testing imports torch."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from pullback.registry import OP_OWNERS
from pullback.testing.opdb import OP_DB, Arg, covered_ops, dispatched_ops, sample_cases

# The Tensor API the issue lists; each needs a record (composites and methods included).
TENSOR_API = """
add sub mul div floor_divide pow neg abs sign exp log log1p expm1 sqrt rsqrt square reciprocal
sin cos tanh sigmoid relu leaky_relu gelu silu softplus erf clamp clip maximum minimum where
eq ne lt le gt ge logical_and logical_or logical_xor logical_not floor ceil round
sum mean prod max min amax amin argmax argmin var std logsumexp norm cumsum all any
reshape view flatten transpose permute swapaxes Tensor.T Tensor.mT squeeze unsqueeze expand
broadcast_to cat stack split chunk pad flip repeat tile tril triu roll
getitem getitem[advanced] gather scatter_add index_select masked_fill one_hot take_along_axis
matmul Tensor.__matmul__ dot outer einsum
op:getitem_scatter op:index_scatter_add op:take_scatter_add op:gather_scatter_add op:cast
op:copy op:norm2 op:swapaxes sum_to
""".split()


def test_every_registered_core_op_has_a_record() -> None:
    core_ops = {name for name, owner in OP_OWNERS.items() if owner == "pullback"}
    assert core_ops, "no core ops registered"
    assert core_ops - covered_ops() == set()


def test_every_function_of_the_tensor_api_has_a_record() -> None:
    assert set(TENSOR_API) - {r.name for r in OP_DB} == set()


def test_record_names_are_unique() -> None:
    names = [r.name for r in OP_DB]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("record", OP_DB, ids=[r.name for r in OP_DB])
def test_a_record_runs_the_ops_it_declares(record: Any) -> None:
    assert set(record.ops) - dispatched_ops(record) == set()


@pytest.mark.parametrize("record", OP_DB, ids=[r.name for r in OP_DB])
def test_sample_ids_are_unique_and_name_the_dtype_under_test(record: Any) -> None:
    for dtype in record.dtypes:
        samples = record.sample_list(dtype)
        assert samples, f"{record.name} has no {dtype} sample"
        ids = [s.id for s in samples]
        assert len(ids) == len(set(ids)), f"{record.name}/{dtype}: repeated ids"
        for s in samples:
            dtypes = {a.value.dtype.name for a in _args(s.args + tuple(s.kwargs.values()))}
            assert dtype in dtypes, f"{record.name}/{dtype}: sample {s.id} has no {dtype} tensor"


def _args(objs: Any) -> list[Arg]:
    out: list[Arg] = []
    for o in objs:
        if isinstance(o, Arg):
            out.append(o)
        elif isinstance(o, (tuple, list)):
            out += _args(o)
    return out


def test_the_suite_covers_edge_shapes_layouts_and_dtypes() -> None:
    cases = sample_cases()
    shapes = {a.value.shape for c in cases for a in _args(c.sample.args)}
    layouts = {a.layout for c in cases for a in _args(c.sample.args)}
    assert {(), (0,), (1,)} <= shapes and any(0 in s for s in shapes if len(s) > 1)
    assert layouts == {"contiguous", "transposed", "strided"}
    assert {c.dtype for c in cases} == {"float16", "bfloat16", "float32", "float64", "int32",
                                        "int64", "bool"}


def test_pullback_testing_imports_without_torch() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"  # any import of torch now fails
            "import pullback.testing, pullback.testing.opdb, pullback.testing.oracle\n"
            "import pullback.testing.conformance, pullback.testing.report\n"
            "from pullback.testing.opdb import sample_cases\n"
            "assert sample_cases()\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
