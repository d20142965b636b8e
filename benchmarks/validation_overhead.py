"""What the argument checks of issues 14 and 15 cost on the hot path, measured per call.

Before/after runs of whole steps (``compare_revisions.py``) on a loaded machine vary by more
than these checks can cost, so this measures the checks themselves:

- nn's window validation (``pullback.nn._ops.geometry``): the CPU time of one call of each
  check on benchmarks/nn_cnn.py's shapes, how many calls one SGD step of that LeNet makes
  (counted), and their share of the step's CPU time;
- core's operand check in Tensor's operators (NotImplemented for non-operands): ``t + u``
  against the same ``apply(ADD, t, u)`` without the operator, per call.

Run: python benchmarks/validation_overhead.py (process CPU time, best of 5 runs of 100,000
calls; the step share is an upper bound: each call is timed on its own).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

import pullback as pb
import pullback.nn.functional as F
from _common import best_per_call, emit
from pullback import nn, optim
from pullback._ops import elementwise
from pullback.dispatch import apply
from pullback.nn._ops import _native, conv, geometry, pool, unfold

CHECKS = ("check_windows", "check_output_size", "check_same_dtype", "check_number_dtype")


def per_call(fn: Callable[[], Any], calls: int = 100_000, runs: int = 5) -> float:
    """Best CPU seconds per call of ``fn`` over ``runs`` runs of ``calls`` calls."""
    return best_per_call(fn, calls, runs, clock=time.process_time)


def lenet_step() -> Callable[[], None]:
    """One SGD step of benchmarks/nn_cnn.py's model on a batch of 64."""
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3),
                          nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 10))
    opt = optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    y = pb.tensor(rng.integers(0, 10, 64))

    def step() -> None:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    return step


def calls_per_step(step: Callable[[], None], steps: int = 20) -> dict[str, float]:
    """How often each check runs in one step (outermost calls only, counted by wrappers)."""
    counts = dict.fromkeys(CHECKS, 0)
    depth = [0]
    originals = {}

    def counting(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not depth[0]:
                counts[name] += 1
            depth[0] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapper

    for module in (conv, pool, unfold, _native, geometry):
        for name in CHECKS:
            if hasattr(module, name):
                originals[(module, name)] = getattr(module, name)
                setattr(module, name, counting(name, getattr(module, name)))
    try:
        for _ in range(steps):
            step()
    finally:
        for (module, name), fn in originals.items():
            setattr(module, name, fn)
    return {name: n / steps for name, n in counts.items()}


def main() -> None:
    shape, a = (64, 1, 28, 28), np.zeros(3, np.float32)
    geometry_args = ("conv2d", shape, (3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1))
    cost = {
        "check_windows": per_call(lambda: geometry.check_windows(*geometry_args)),
        "check_output_size": per_call(lambda: geometry.check_output_size(*geometry_args,
                                                                         (26, 26))),
        "check_same_dtype": per_call(lambda: geometry.check_same_dtype(
            "conv2d", ("input", a), ("weight", a), ("bias", None))),
        "check_number_dtype": per_call(lambda: geometry.check_number_dtype("conv2d", a)),
    }
    step = lenet_step()
    for _ in range(5):
        step()
    counts = calls_per_step(step)
    start = time.process_time()
    for _ in range(50):
        step()
    step_s = (time.process_time() - start) / 50
    spent = sum(cost[name] * counts[name] for name in CHECKS)
    emit(benchmark="window_validation", per_call_us={k: round(v * 1e6, 3) for k, v in
                                                     cost.items()},
         calls_per_step=counts, validation_us_per_step=round(spent * 1e6, 1),
         step_ms=round(step_s * 1e3, 3), share_of_step=round(spent / step_s, 4),
         clock="process CPU time")

    t, u = pb.tensor(np.ones(8, np.float32)), pb.tensor(np.ones(8, np.float32))
    with pb.no_grad():
        through_operator = per_call(lambda: t + u)
        through_apply = per_call(lambda: apply(elementwise.ADD, t, u))
    emit(benchmark="operator_operand_check", operator_us=round(through_operator * 1e6, 3),
         apply_us=round(through_apply * 1e6, 3),
         check_us=round((through_operator - through_apply) * 1e6, 3), clock="process CPU time",
         note="8-element float32 add without grad; the difference is the operator's check and "
              "its Python call")


if __name__ == "__main__":
    main()
