"""PyTorch as the oracle: run a database sample in PyTorch and in pullback, and compare.

The torch module is always an argument (tests get it with ``pytest.importorskip("torch")``):
importing this module never imports torch.
"""

from __future__ import annotations

import zlib
from typing import Any, Sequence

import numpy as np

from .compare import Outcome, PullbackFramework, Run, compare_runs, run_sample
from .opdb import OpRecord, Sample
from .opdb._torch import numpy_dtype_name


class TorchFactory:
    """PyTorch CPU tensors from NumPy arrays (bfloat16 goes through float32, exactly)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def leaf(self, array: np.ndarray, requires_grad: bool) -> Any:
        torch = self.torch
        if array.dtype.name == "bfloat16":
            t = torch.tensor(array.astype(np.float32)).to(torch.bfloat16)
        else:
            t = torch.tensor(array)
        return t.requires_grad_(requires_grad)

    def permute(self, t: Any, axes: tuple[int, ...]) -> Any:
        return t.permute(*axes)

    def every_other(self, t: Any) -> Any:
        return t[..., ::2]


class TorchFramework:
    """PyTorch, for :func:`pullback.testing.compare.run_sample`."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.factory = TorchFactory(torch)

    def grad(self, outputs: Sequence[Any], inputs: Sequence[Any], grad_outputs: Sequence[Any] | None,
             create_graph: bool) -> Sequence[Any]:
        return self.torch.autograd.grad(list(outputs), list(inputs), grad_outputs=grad_outputs,
                                        create_graph=create_graph, allow_unused=True)

    def to_host(self, t: Any) -> np.ndarray:
        t = t.detach()
        if t._is_zerotensor():  # PyTorch's symbolic zeros (e.g. abs's double backward)
            t = self.torch.zeros(t.shape, dtype=t.dtype)
        if t.dtype == self.torch.bfloat16:
            t = t.float()
        return t.numpy()

    def dtype_name(self, t: Any) -> str:
        return numpy_dtype_name(t.dtype)

    def requires_grad(self, t: Any) -> bool:
        return bool(t.requires_grad)

    def tensor(self, values: np.ndarray, like: Any, requires_grad: bool) -> Any:
        t = self.torch.tensor(values, dtype=like.dtype)
        return t.requires_grad_(requires_grad)


def case_seed(record: OpRecord, dtype: str, sample: Sample) -> int:
    """The seed of a case's cotangents and weights (stable across runs and frameworks)."""
    return zlib.crc32(f"{record.name}/{dtype}/{sample.id}".encode())


def torch_run(torch: Any, record: OpRecord, dtype: str, sample: Sample, *, double: bool) -> Run:
    """Run the record's PyTorch equivalent on the sample."""
    if record.torch is None:
        raise ValueError(f"record '{record.name}' has no PyTorch equivalent")
    bound = sample.bind(TorchFactory(torch), differentiable=record.differentiable)
    return run_sample(TorchFramework(torch), record.torch(torch), bound,
                      np.random.default_rng(case_seed(record, dtype, sample)),
                      backward=record.differentiable, double=double)


def pullback_run(record: OpRecord, dtype: str, sample: Sample, *, device: Any = "cpu",
                 double: bool) -> Run:
    """Run the record's pullback function on the sample (on ``device``)."""
    framework = PullbackFramework(device)
    bound = sample.bind(framework.factory, differentiable=record.differentiable)
    return run_sample(framework, record.fn, bound,
                      np.random.default_rng(case_seed(record, dtype, sample)),
                      backward=record.differentiable, double=double)


def compare_with_torch(torch: Any, record: OpRecord, dtype: str, sample: Sample, *,
                       double: bool | None = None) -> Outcome:
    """Forward, backward and (by default for float64 samples valid for gradcheck) double
    backward against PyTorch.

    For records declared non-differentiable, pullback's floating outputs must not require grad
    when their inputs do.
    """
    if double is None:
        double = record.differentiable and dtype == "float64" and sample.gradcheck
    expected = torch_run(torch, record, dtype, sample, double=double)
    actual = pullback_run(record, dtype, sample, double=double)
    outcome = compare_runs(actual, expected, dtype_note=sample.dtype_note,
                           overrides=record.tolerance, expected_name="PyTorch")
    if not record.differentiable:
        outcome.problems += _non_differentiable_problems(record, sample)
    return outcome


def _non_differentiable_problems(record: OpRecord, sample: Sample) -> list[str]:
    """A non-differentiable op given inputs that require grad must give outputs that don't,
    or (PyTorch's floor_divide) outputs whose backward raises an error naming the op: never a
    gradient that silently skips the op."""
    from ..errors import AutogradError
    from .compare import flatten_outputs

    bound = sample.bind(PullbackFramework().factory, differentiable=True)
    if not bound.leaves:
        return []
    outs = flatten_outputs(bound.call(record.fn))
    problems = []
    for i, o in enumerate(outs):
        if not o.requires_grad:
            continue
        try:
            o.sum().backward()
        except AutogradError as exc:
            if any(op in str(exc) for op in record.ops):
                continue
        problems.append(f"output {i} requires grad, but '{record.name}' is declared "
                        "non-differentiable and its backward does not raise an error naming it")
    return problems

