"""Running a sample in one framework and comparing two runs: the parity tests (pullback against
PyTorch), the backend conformance suite (a backend against the CPU) and the report share it.

A :class:`Run` holds what a sample produced, on the host: the forward outputs, the gradients of
``<outputs, cotangents>`` with respect to the leaves, and optionally the double backward (the
gradients of ``<gradients, weights>`` with respect to the leaves and the cotangents). Cotangents
and weights are drawn from a generator seeded by the caller, so two runs of one sample use the
same values. :func:`compare_runs` turns two runs into :class:`Comparison` lines.

The error measure is the allclose criterion as one number: ``max |a - e| / (|e| + atol/rtol)``,
which passes when it is at most ``rtol``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

import numpy as np

from .opdb import BoundSample, ErrorCase, OpRecord, PullbackFactory, Sample, TensorFactory

# (rtol, atol) per dtype: float64 is held to 1e-10; the others to a few units in their last place.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-12),
    "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-3),
    "bfloat16": (1.6e-2, 1e-2),
}


def tolerance(dtype_name: str, overrides: Mapping[str, tuple[float, float]] | None = None,
              kind: str = "forward") -> tuple[float, float] | None:
    """``(rtol, atol)`` for a floating dtype; ``None`` means "compare exactly".

    Gradients in float16/bfloat16 get twice the forward tolerance: a backward chains several
    rounded ops, and PyTorch's formulas round at other places than pullback's.
    """
    if overrides and dtype_name in overrides:
        return overrides[dtype_name]
    tol = TOLERANCES.get(dtype_name)
    if tol is not None and kind != "forward" and dtype_name in ("float16", "bfloat16"):
        return 2 * tol[0], 2 * tol[1]
    return tol


def relative_error(actual: np.ndarray, expected: np.ndarray, tol: tuple[float, float] | None
                   ) -> float:
    """``max |a - e| / (|e| + atol / rtol)``; 0 or inf for exact comparisons (``tol=None``).

    NaN matches NaN and an infinity matches the same infinity; any other mismatch of non-finite
    values is an infinite error.
    """
    if actual.size == 0:
        return 0.0
    if tol is None:
        return 0.0 if np.array_equal(actual, expected) else float("inf")
    rtol, atol = tol
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    differ = ~((a == e) | (np.isnan(a) & np.isnan(e)))
    a, e = a[differ], e[differ]
    if a.size == 0:
        return 0.0
    if not (np.isfinite(a).all() and np.isfinite(e).all()):
        return float("inf")
    return float((np.abs(a - e) / (np.abs(e) + atol / rtol)).max())


def flatten_outputs(out: Any) -> list[Any]:
    """A function's result as a flat list of tensors (tuples and lists are opened)."""
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in flatten_outputs(o)]
    return [out]


class Framework(Protocol):
    """What running a sample needs from a framework (pullback on a device, or PyTorch)."""

    @property
    def factory(self) -> TensorFactory:
        """Makes the framework's tensors from NumPy arrays."""

    def grad(self, outputs: Sequence[Any], inputs: Sequence[Any], grad_outputs: Sequence[Any] | None,
             create_graph: bool) -> Sequence[Any]:
        """Gradients of ``outputs`` w.r.t. ``inputs`` (``None`` for unused inputs)."""

    def to_host(self, t: Any) -> np.ndarray:
        """The values as a NumPy array (bfloat16 as float32)."""

    def dtype_name(self, t: Any) -> str:
        """The dtype's name ("float32", "bfloat16", "int64", "bool"...)."""

    def requires_grad(self, t: Any) -> bool:
        """Whether ``t`` carries a gradient."""

    def tensor(self, values: np.ndarray, like: Any, requires_grad: bool) -> Any:
        """A leaf with ``values`` in ``like``'s dtype and on its device."""


class PullbackFramework:
    """pullback on one device."""

    def __init__(self, device: Any = "cpu") -> None:
        self.factory = PullbackFactory(device)

    def grad(self, outputs: Sequence[Any], inputs: Sequence[Any], grad_outputs: Sequence[Any] | None,
             create_graph: bool) -> Sequence[Any]:
        from ..autograd import grad

        return grad(list(outputs), list(inputs), grad_outputs=grad_outputs,
                    create_graph=create_graph, allow_unused=True)

    def to_host(self, t: Any) -> np.ndarray:
        arr = t.device.backend.to_host(t.array)
        return arr.astype(np.float32) if arr.dtype.name == "bfloat16" else arr

    def dtype_name(self, t: Any) -> str:
        return str(t.dtype)

    def requires_grad(self, t: Any) -> bool:
        return bool(t.requires_grad)

    def tensor(self, values: np.ndarray, like: Any, requires_grad: bool) -> Any:
        from ..creation import tensor

        return tensor(values, dtype=like.dtype, device=like.device, requires_grad=requires_grad)


_FLOATING = ("float16", "bfloat16", "float32", "float64")


@dataclass
class Run:
    """What one framework produced for one sample (host arrays).

    ``grads`` has one entry per leaf; ``double`` one per leaf then one per floating output
    (the derivative with respect to its cotangent). Unused inputs give zeros. ``devices`` names
    the device of every output and gradient.
    """

    outputs: list[np.ndarray]
    dtypes: list[str]
    shapes: list[tuple[int, ...]]
    output_requires_grad: list[bool]
    devices: list[str]
    grads: list[np.ndarray] | None = None
    grad_dtypes: list[str] | None = None
    double: list[np.ndarray] | None = None


def run_sample(framework: Framework, fn: Callable[..., Any], bound: BoundSample,
               rng: np.random.Generator, *, backward: bool, double: bool = False) -> Run:
    """Run ``fn`` on ``bound`` (forward, and backward/double backward when asked)."""
    outs = flatten_outputs(bound.call(fn))
    run = Run([framework.to_host(o) for o in outs], [framework.dtype_name(o) for o in outs],
              [tuple(o.shape) for o in outs], [framework.requires_grad(o) for o in outs],
              [str(o.device) for o in outs])
    leaves = bound.leaves
    if not backward or not leaves:
        return run
    floating = [i for i, d in enumerate(run.dtypes) if d in _FLOATING]
    # Drawn for every floating output, used or not, so both frameworks see the same numbers.
    cot_values = {i: rng.standard_normal(run.shapes[i]) for i in floating}
    weights = [rng.standard_normal(tuple(leaf.shape)) for leaf in leaves]
    used = [i for i in floating if run.output_requires_grad[i]]
    cots = {i: framework.tensor(cot_values[i], outs[i], requires_grad=double) for i in used}
    grads: Sequence[Any] = [None] * len(leaves)
    if used:
        grads = framework.grad([outs[i] for i in used], leaves, [cots[i] for i in used],
                               create_graph=double)
    run.grads = [np.zeros(tuple(leaf.shape)) if g is None else framework.to_host(g)
                 for g, leaf in zip(grads, leaves)]
    run.grad_dtypes = [framework.dtype_name(g if g is not None else leaf)
                       for g, leaf in zip(grads, leaves)]
    run.devices += [str(g.device) for g in grads if g is not None]
    if not double:
        return run
    terms = [(g * framework.tensor(w, g, requires_grad=False)).sum()
             for g, w in zip(grads, weights) if g is not None and framework.requires_grad(g)]
    targets = list(leaves) + [cots[i] for i in used]
    second: Sequence[Any] = [None] * len(targets)
    if terms:
        second = framework.grad([sum(terms[1:], terms[0])], targets, None, create_graph=False)
    by_target = dict(zip(range(len(targets)), second))
    run.double = [np.zeros(tuple(leaf.shape)) if by_target[k] is None
                  else framework.to_host(by_target[k]) for k, leaf in enumerate(leaves)]
    for i in floating:
        g = by_target.get(len(leaves) + used.index(i)) if i in used else None
        run.double.append(np.zeros(run.shapes[i]) if g is None else framework.to_host(g))
    return run


@dataclass(frozen=True)
class Comparison:
    """One compared quantity: ``kind`` is "forward", "backward" or "double backward"."""

    kind: str
    what: str
    error: float
    rtol: float

    @property
    def passed(self) -> bool:
        return self.error <= self.rtol


@dataclass
class Outcome:
    """All comparisons of one sample, plus structural mismatches (shapes, dtypes, counts)."""

    comparisons: list[Comparison] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def worst(self, kind: str) -> float | None:
        """The largest error of one kind (``None`` when nothing of that kind was compared)."""
        errors = [c.error for c in self.comparisons if c.kind == kind]
        return max(errors) if errors else None

    @property
    def failures(self) -> list[str]:
        bad = [f"{c.what}: error {c.error:.3g} > rtol {c.rtol:g}" for c in self.comparisons
               if not c.passed]
        return self.problems + bad

    @property
    def passed(self) -> bool:
        return not self.failures

    def check(self, context: str) -> None:
        """Raise an AssertionError listing every failure."""
        if self.failures:
            raise AssertionError(context + ":\n  " + "\n  ".join(self.failures))


def _compare_arrays(outcome: Outcome, kind: str, what: str, actual: np.ndarray,
                    expected: np.ndarray, dtype_name: str,
                    overrides: Mapping[str, tuple[float, float]] | None) -> None:
    if actual.shape != expected.shape:
        outcome.problems.append(f"{what}: shape {actual.shape}, expected {expected.shape}")
        return
    tol = tolerance(dtype_name, overrides, kind)
    outcome.comparisons.append(Comparison(kind, what, relative_error(actual, expected, tol),
                                          tol[0] if tol else 0.0))


def compare_runs(actual: Run, expected: Run, *, dtype_note: str = "",
                 overrides: Mapping[str, tuple[float, float]] | None = None,
                 expected_name: str = "expected") -> Outcome:
    """Compare ``actual`` with ``expected`` output by output, gradient by gradient.

    Tolerances follow the expected dtype of each quantity. With a ``dtype_note`` the output
    dtypes may differ (and the note says why); otherwise a dtype difference is a failure.
    """
    out = Outcome()
    if len(actual.outputs) != len(expected.outputs):
        out.problems.append(f"{len(actual.outputs)} outputs, {expected_name} gives "
                            f"{len(expected.outputs)}")
        return out
    for i, (a, e) in enumerate(zip(actual.outputs, expected.outputs)):
        if actual.dtypes[i] != expected.dtypes[i] and not dtype_note:
            out.problems.append(f"output {i}: dtype {actual.dtypes[i]}, {expected_name} gives "
                                f"{expected.dtypes[i]}")
        _compare_arrays(out, "forward", f"output {i}", a, e, expected.dtypes[i], overrides)
    if actual.grads is not None and expected.grads is not None:
        for k, (a, e) in enumerate(zip(actual.grads, expected.grads)):
            dtype_name = expected.grad_dtypes[k] if expected.grad_dtypes else "float64"
            if actual.grad_dtypes and actual.grad_dtypes[k] != dtype_name:
                out.problems.append(f"gradient of input {k}: dtype {actual.grad_dtypes[k]}, "
                                    f"{expected_name} gives {dtype_name}")
            _compare_arrays(out, "backward", f"gradient of input {k}", a, e, dtype_name, overrides)
    if actual.double is not None and expected.double is not None:
        for k, (a, e) in enumerate(zip(actual.double, expected.double)):
            _compare_arrays(out, "double backward", f"double backward, argument {k}", a, e,
                            "float64", overrides)
    return out


def run_error_case(record: OpRecord, case: ErrorCase, device: Any = "cpu",
                   check_message: bool = True) -> tuple[BaseException | None, str | None]:
    """Run a bad-input case on ``device``: what it raised (``None``: nothing), and ``None`` when
    that is the expected error type (with a message matching ``case.match`` when
    ``check_message``), else what went wrong."""
    import re

    bound = Sample(case.args, case.kwargs).bind(PullbackFactory(device), differentiable=False)
    try:
        bound.call(record.fn)
    except case.error as exc:
        if check_message and not re.search(case.match, str(exc)):
            return exc, (f"{case.error.__name__} raised, but its message {str(exc)!r} does not "
                         f"match {case.match!r}")
        return exc, None
    except Exception as exc:  # noqa: BLE001 - reported with its type
        return exc, f"expected {case.error.__name__}, got {type(exc).__name__}: {exc}"
    return None, f"expected {case.error.__name__}, nothing was raised"


def error_case_problem(record: OpRecord, case: ErrorCase, device: Any = "cpu",
                       check_message: bool = True) -> str | None:
    """Run a bad-input case on ``device``; ``None`` when it raised the expected error type
    (with a message matching ``case.match`` when ``check_message``), else what went wrong."""
    return run_error_case(record, case, device, check_message)[1]


def _other_floating(dtype_name: str) -> str:
    """The cotangent dtype that differs from an output's: float32 on float64, else float64."""
    return "float32" if dtype_name == "float64" else "float64"


def cotangent_dtype_problems(record: OpRecord, dtype: str, sample: Sample,
                             device: Any = "cpu") -> list[str]:
    """Backward with cotangents in another floating dtype than their outputs (float32 on a
    float64 graph, float64 on the others) must give, exactly, the gradients of cotangents cast
    to the outputs' dtypes first (PyTorch casts them), each in its input's dtype. The problems
    found, empty when none."""
    from ..creation import tensor

    framework = PullbackFramework(device)
    bound = sample.bind(framework.factory, differentiable=record.differentiable)
    if not bound.leaves:
        return []
    outs = [o for o in flatten_outputs(bound.call(record.fn))
            if framework.dtype_name(o) in _FLOATING and o.requires_grad]
    if not outs:
        return []
    rng = np.random.default_rng(zlib.crc32(f"{record.name}/{dtype}/{sample.id}".encode()))
    values = [rng.standard_normal(tuple(o.shape)) for o in outs]
    foreign = [tensor(v, dtype=_other_floating(str(o.dtype)), device=o.device)
               for v, o in zip(values, outs)]
    cast_first = [f.to(o.dtype) for f, o in zip(foreign, outs)]
    got = framework.grad(outs, bound.leaves, foreign, create_graph=False)
    bound = sample.bind(framework.factory, differentiable=record.differentiable)
    outs = [o for o in flatten_outputs(bound.call(record.fn))
            if framework.dtype_name(o) in _FLOATING and o.requires_grad]
    expected = framework.grad(outs, bound.leaves, cast_first, create_graph=False)
    problems = []
    for k, (g, e, leaf) in enumerate(zip(got, expected, bound.leaves)):
        if g is None or e is None:
            if (g is None) != (e is None):
                problems.append(f"gradient of input {k}: present in one run only")
            continue
        if g.dtype != leaf.dtype:
            problems.append(f"gradient of input {k}: dtype {g.dtype}, its input is {leaf.dtype}")
        a, b = framework.to_host(g), framework.to_host(e)
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
            worst = float(np.nanmax(np.abs(a.astype(np.float64) - b))) if a.shape == b.shape \
                else float("inf")
            problems.append(f"gradient of input {k}: differs by up to {worst:.3g} from the "
                            f"gradient of the cotangent cast to the output's dtype first")
    return problems
