"""The op database: one record per public function of core (and per internal registry op).

The generated tests read it: PyTorch parity (forward, backward, double backward), gradcheck and
gradgradcheck in float64, the error cases, and the backend conformance suite. Each record names
the pullback function to call, PyTorch's equivalent (resolved lazily from the torch module), the
registry ops it exercises, its dtypes, and sample inputs covering broadcasting, Python scalars on
either side, 0-d tensors, size-0 and size-1 dims, non-contiguous views and attribute variants.

Example::

    from pullback.testing.opdb import get_record, sample_cases

    add = get_record("add")
    for case in sample_cases([add], dtypes=("float64",)):
        print(case.id)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from . import creation, elementwise, index, internal, linalg, methods, reduce, shape
from . import decompositions, products, scans, scatter, shape_extra, sort
from . import special_elementwise
from ._record import (
    PRIMARY_DTYPES, Arg, BoundSample, ErrorCase, OpRecord, PullbackFactory, Sample, TensorFactory,
    view_of,
)

OP_DB: tuple[OpRecord, ...] = (
    *elementwise.RECORDS, *reduce.RECORDS, *shape.RECORDS, *index.RECORDS, *linalg.RECORDS,
    *methods.RECORDS, *internal.RECORDS, *creation.RECORDS, *special_elementwise.RECORDS,
    *products.RECORDS, *scans.RECORDS, *sort.RECORDS, *shape_extra.RECORDS,
    *scatter.RECORDS, *decompositions.RECORDS,
)

_BY_NAME = {r.name: r for r in OP_DB}


def get_record(name: str) -> OpRecord:
    """The record called ``name``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no op database record named '{name}'") from None


def extension_records() -> tuple[OpRecord, ...]:
    """The records that plugins attach to their ops (rule key ``"opdb"``: a function returning
    a tuple of records), sorted by name: pullback.nn's functions, for instance. Only loaded
    plugins contribute (``import pullback.nn`` loads nn's)."""
    from ...registry import OPS

    found = {r.name: r for op in list(OPS.values()) if "opdb" in op.rules
             for r in op.rules["opdb"]()}
    return tuple(found[name] for name in sorted(found))


def dispatched_ops(record: OpRecord) -> set[str]:
    """The registry ops that running every sample of ``record`` (forward, in every dtype)
    dispatches: what its ``ops`` must be part of."""
    import numpy as np

    from ...dispatch import DispatchMode, apply

    seen: set[str] = set()

    class Recorder(DispatchMode):
        def dispatch(self, op: Any, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
            seen.add(op.name)
            return apply(op, *args, **attrs)

    with np.errstate(all="ignore"), Recorder():
        for dtype in record.dtypes:
            for sample in record.sample_list(dtype):
                sample.bind(PullbackFactory()).call(record.fn)
    return seen


def covered_ops(records: Iterable[OpRecord] = OP_DB) -> set[str]:
    """The registry ops that some record exercises."""
    return {op for r in records for op in r.ops}


@dataclass(frozen=True)
class Case:
    """One sample of one record in one dtype; ``id`` reads ``op-dtype-shapes``."""

    record: OpRecord
    dtype: str
    sample: Sample

    @property
    def id(self) -> str:
        return f"{self.record.name}-{self.dtype}-{self.sample.id}"


def sample_cases(records: Iterable[OpRecord] = OP_DB, dtypes: Sequence[str] | None = None,
                 thorough: bool = True) -> list[Case]:
    """Every (record, dtype, sample), optionally for some dtypes only; ``thorough=False``
    thins out the secondary dtypes (see :meth:`OpRecord.sample_list`)."""
    return [Case(r, d, s) for r in records for d in r.dtypes
            if dtypes is None or d in dtypes for s in r.sample_list(d, thorough)]


def error_cases(records: Iterable[OpRecord] = OP_DB) -> list[tuple[OpRecord, ErrorCase]]:
    """Every (record, error case)."""
    return [(r, e) for r in records for e in r.error_list()]


__all__ = [
    "OP_DB", "PRIMARY_DTYPES", "Arg", "BoundSample", "Case", "ErrorCase", "OpRecord",
    "PullbackFactory", "Sample", "TensorFactory", "covered_ops", "dispatched_ops", "error_cases",
    "extension_records",
    "get_record", "sample_cases", "view_of",
]
