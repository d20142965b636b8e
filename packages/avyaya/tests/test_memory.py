"""The forward pass keeps only the stack's output: what stays allocated after forward, and
the activation part of the peak of forward plus backward, do not grow with depth (tracemalloc
counts NumPy's arrays). Measured, not timed; benchmarks/avyaya_memory.py has the curves."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np

import pullback as pb

from avyaya_helpers import make_stack, ordinary

WIDTH, BATCH = 64, 128
ACTIVATION = BATCH * WIDTH * 8  # one (batch, width) float64 array


def _measure(depth: int, reversible: bool) -> tuple[int, int]:
    """(bytes held after forward, peak bytes of forward + backward less one copy of the
    parameters' gradients), over what was allocated before.

    The engine holds every parameter's gradient until the end of backward, then adds it into
    ``.grad``, in both paths: that copy grows with the parameter count, not with activations.
    """
    stack = make_stack("additive", depth, features=WIDTH)
    x = pb.tensor(np.random.default_rng(0).standard_normal((BATCH, WIDTH)), requires_grad=True)
    run = (lambda v: stack(v)) if reversible else (lambda v: ordinary(stack, v)[0])
    run(x).sum().backward()  # gradients exist, as in training from the second step on
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    y = run(x)
    held = tracemalloc.get_traced_memory()[0] - base
    (y * y).sum().backward()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return held, peak - sum(p.array.nbytes for p in stack.parameters())


def test_reversible_memory_is_flat_in_depth_and_ordinary_is_not():
    shallow_held, shallow_peak = _measure(4, reversible=True)
    deep_held, deep_peak = _measure(64, reversible=True)
    # After forward: the output and no array per block; what grows is the graph node's
    # references to the parameters (8 bytes each, 512 more parameters at depth 64).
    assert deep_held <= 2 * ACTIVATION, deep_held
    assert deep_held - shallow_held <= ACTIVATION // 2, (shallow_held, deep_held)
    # The peak grows by Python objects per parameter tensor (its gradient's wrapper, the
    # engine's book-keeping): under 1 KiB each, 8 tensors a block; an ordinary block adds
    # several (batch, width) arrays, 64 KiB each.
    more_params = 8 * (64 - 4)
    assert deep_peak <= shallow_peak + ACTIVATION + 1024 * more_params, (shallow_peak, deep_peak)
    ordinary_held, ordinary_peak = _measure(64, reversible=False)
    assert ordinary_held >= 64 * ACTIVATION  # stores at least one array per block
    assert deep_peak * 10 <= ordinary_peak
