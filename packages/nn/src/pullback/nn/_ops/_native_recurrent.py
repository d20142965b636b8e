"""The LSTM layer's time loops on float32 NumPy arrays with the C step kernels of
``_csrc/recurrent.c``: per step one BLAS GEMM into a preallocated buffer and one C call, where
the NumPy loop of :mod:`.recurrent_cells` makes about fifteen NumPy calls (forward) or eight
(backward) whose overhead outweighs their work at language-model sizes (batch 20, 256 wide).

Covered: an LSTM layer without projection or packed-sequence lengths, float32, with a C
compiler. Both functions return ``NotImplemented`` otherwise, and :mod:`.recurrent` runs its
generic loop. Their results and saved buffers are those of the generic loop (the same
``LSTMCell.saved_names``), so either backward can follow either forward.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback import native

from . import _native


def _kernel(name: str, n_pointers: int, n_sizes: int) -> Any:
    return _native._function(name, n_pointers, n_sizes, source="recurrent")


def _all_float32(*arrays: Any) -> bool:
    return all(a.__class__ is np.ndarray and a.dtype == np.float32 for a in arrays)


def _contiguous(a: Any) -> Any:
    return np.ascontiguousarray(a)


def lstm_forward(pre: Any, h0: Any, c0: Any, w_hh_t: Any, *, reverse: bool) -> Any:
    """``(out, saved)`` of an LSTM layer (see :mod:`.recurrent`) from ``pre`` (T, B, 4H), the
    input projection with both biases, which becomes the gate activations in place; ``w_hh_t``
    is (H, 4H), contiguous."""
    steps, batch, gate_width = pre.shape
    hidden = gate_width // 4
    kernel = _kernel("lstm_forward_step_f32", 6, 1)
    if (kernel is None or not _all_float32(pre, h0, c0, w_hh_t) or not pre.flags.c_contiguous
            or steps == 0 or gate_width != 4 * hidden or hidden == 0
            or h0.shape != (batch, hidden) or c0.shape != (batch, hidden)
            or w_hh_t.shape != (hidden, gate_width)):
        return NotImplemented
    h_prev = np.empty((steps, batch, hidden), dtype=np.float32)
    c_prev = np.empty_like(h_prev)
    tanh_c = np.empty_like(h_prev)
    h_last, c_last = np.empty((batch, hidden), np.float32), np.empty((batch, hidden), np.float32)
    hw = np.empty((batch, gate_width), dtype=np.float32)
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    h_prev[order[0]], c_prev[order[0]] = h0, c0
    for k, t in enumerate(order):
        # the new state goes where the next step reads it (its h_prev/c_prev), the last one
        # to h_last/c_last
        nxt = order[k + 1] if k + 1 < steps else None
        h_new = h_last if nxt is None else h_prev[nxt]
        c_new = c_last if nxt is None else c_prev[nxt]
        np.matmul(h_prev[t], w_hh_t, out=hw)
        native.run_rows(kernel, batch, gate_width, native.address(pre[t]), native.address(hw),
                        native.address(c_prev[t]), native.address(c_new),
                        native.address(tanh_c[t]), native.address(h_new), hidden)
    out = np.empty((steps + 1, batch, 2 * hidden), dtype=np.float32)
    # out[t]: the state after step t, which is the h_prev/c_prev of the step after it
    after = (slice(0, steps - 1), slice(1, steps)) if reverse else (slice(1, steps),
                                                                    slice(0, steps - 1))
    last = 0 if reverse else steps - 1
    for half, states, final in ((slice(0, hidden), h_prev, h_last),
                                (slice(hidden, None), c_prev, c_last)):
        out[after[1], :, half] = states[after[0]]
        out[last, :, half] = final
        out[steps, :, half] = final
    return out, (pre, h_prev, c_prev, tanh_c, None)


def lstm_backward(g: Any, acts: Any, c_prev: Any, tanh_c: Any, w_hh: Any, *,
                  reverse: bool) -> Any:
    """``(dgates, gh0, gc0)``: the gradients of the gate pre-activations (T, B, 4H) and of the
    initial state, from ``g`` (T+1, B, 2H), the gradient of the layer's output, whose cell-state
    part is zero except at the final state (what the layers return); or ``NotImplemented``."""
    steps, batch, gate_width = acts.shape
    hidden = gate_width // 4
    kernel = _kernel("lstm_backward_step_f32", 7, 2)
    if (kernel is None or not _all_float32(g, acts, c_prev, tanh_c, w_hh) or steps == 0
            or gate_width != 4 * hidden or hidden == 0
            or g.shape != (steps + 1, batch, 2 * hidden)
            or c_prev.shape != (steps, batch, hidden) or tanh_c.shape != c_prev.shape
            or w_hh.shape != (gate_width, hidden)):
        return NotImplemented
    g, acts, c_prev, tanh_c, w_hh = map(_contiguous, (g, acts, c_prev, tanh_c, w_hh))
    gh = g[steps, :, :hidden].copy()  # then, each step, what reaches h through the GEMM
    gc = g[steps, :, hidden:].copy()
    dgates = np.empty_like(acts)
    for t in (range(steps) if reverse else range(steps - 1, -1, -1)):
        native.run_rows(kernel, batch, gate_width, native.address(gh), native.address(g[t]),
                        native.address(gc), native.address(acts[t]), native.address(c_prev[t]),
                        native.address(tanh_c[t]), native.address(dgates[t]), hidden, 2 * hidden)
        np.matmul(dgates[t], w_hh, out=gh)
    return dgates, gh, gc
