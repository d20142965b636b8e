"""``nn.recurrent_layer``: one layer and direction of an RNN, LSTM or GRU over a whole sequence,
as one op whose backward runs the reverse loop.

Inputs: ``x`` (T, B, I), the initial state ``h0`` (B, P) and ``c0`` (B, H; LSTM only, else
None), PyTorch's weights ``w_ih`` (G*H, I), ``w_hh`` (G*H, P), biases ``b_ih``/``b_hh`` (G*H,
or None) and the LSTM projection ``w_hr`` (P, H, or None). Attributes: ``mode`` (a key of
:data:`.recurrent_cells.CELLS`), ``reverse`` (run from the last step to the first) and
``lengths`` (per batch element, for packed sequences: steps at or after an element's length
leave its state unchanged and output zeros; None when every sequence has length T).

An op has one output, so the output packs everything a caller reads: ``out[t]`` for t < T is
step t's state, ``[h_t, c_t]`` along the last axis (``h_t`` alone without a cell state), and
``out[T]`` is the final state (for an element of length L, its state after step L - 1 when
running forwards). Callers slice what they need.

Why one op: the time loop costs a few NumPy calls per step and no graph node at all; the input
projection of every step is one GEMM before the loop, and the weight gradients are one GEMM
each after the reverse loop (PyTorch's CPU LSTM does the same). First-order backward is one
call of ``nn.recurrent_layer_backward``; under ``create_graph=True`` the grad rule replays the
layer with differentiable Tensor ops (each cell's ``reference_step``) and differentiates that.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.promotion import SAME
from pullback.registry import Op

from . import _native_recurrent
from ._call import op_in
from .recurrent_cells import CELLS


def _step_masks(xp: Any, lengths: tuple[int, ...] | None, steps: int) -> list[Any] | None:
    """Per step, None when every sequence is still running, else a (B, 1) bool mask of those
    that are."""
    if lengths is None:
        return None
    running = xp.asarray(lengths)[:, None]
    return [None if bool((running > t).all()) else running > t for t in range(steps)]


def _order(steps: int, reverse: bool) -> range:
    return range(steps - 1, -1, -1) if reverse else range(steps)


def _recurrent_layer_kernel(xp: Any) -> Any:
    def recurrent_layer(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                        w_hr: Any, *, mode: str, reverse: bool = False,
                        lengths: tuple[int, ...] | None = None) -> Any:
        cell = CELLS[mode]
        steps, batch, features = x.shape
        width = h0.shape[-1]
        pre = (x.reshape(steps * batch, features) @ w_ih.T).reshape(steps, batch, -1)
        bias = cell.input_bias(b_ih, b_hh)
        if bias is not None:
            pre += bias
        if mode == "LSTM" and w_hr is None and lengths is None and xp is np:
            done = _native_recurrent.lstm_forward(pre, h0, c0, np.ascontiguousarray(w_hh.T),
                                                  reverse=reverse)
            if done is not NotImplemented:
                return done
        buf = cell.buffers(xp, pre, width, w_hr is not None)
        cell_width = c0.shape[-1] if cell.has_cell_state else 0
        out = xp.empty((steps + 1, batch, width + cell_width), dtype=x.dtype)
        masks = _step_masks(xp, lengths, steps)
        w_hh_t = xp.ascontiguousarray(w_hh.T)
        w_hr_t = None if w_hr is None else xp.ascontiguousarray(w_hr.T)
        h, c = h0, c0
        for t in _order(steps, reverse):
            h_new, c_new = cell.step(xp, t, h, c, w_hh_t, b_hh, w_hr_t, buf)
            running = masks[t] if masks is not None else None
            if running is not None:  # finished sequences keep their state and output zeros
                h_new = xp.where(running, h_new, h)
                out[t, :, :width] = h_new * running
                if c_new is not None:
                    c_new = xp.where(running, c_new, c)
                    out[t, :, width:] = c_new * running
            else:
                out[t, :, :width] = h_new
                if c_new is not None:
                    out[t, :, width:] = c_new
            h, c = h_new, c_new
        out[steps, :, :width] = h
        if cell.has_cell_state:
            out[steps, :, width:] = c
        return out, tuple(buf[name] for name in cell.saved_names)

    return recurrent_layer


RECURRENT_LAYER = Op(
    "nn.recurrent_layer", _recurrent_layer_kernel, aux=True, save_output=True, promotion=SAME,
    doc="one layer and direction of an RNN/LSTM/GRU over a sequence: (T+1, B, P[+H]) states")


def _recurrent_layer_backward_kernel(xp: Any) -> Any:
    def recurrent_layer_backward(g: Any, out: Any, x: Any, h0: Any, c0: Any, w_ih: Any,
                                 w_hh: Any, b_ih: Any, b_hh: Any, w_hr: Any, *saved: Any,
                                 mode: str, reverse: bool = False,
                                 lengths: tuple[int, ...] | None = None,
                                 needs: tuple[bool, ...] = (True,) * 8) -> Any:
        cell = CELLS[mode]
        named = dict(zip(cell.saved_names, saved))
        steps, batch, features = x.shape
        width = h0.shape[-1]
        g_h = g[:steps, :, :width]
        g_c = g[:steps, :, width:] if cell.has_cell_state else None
        if g_c is not None and not g_c.any():
            g_c = None  # only the final cell state is returned by the layers: skip the zeros
        masks = _step_masks(xp, lengths, steps)
        if masks is not None:  # outputs past a sequence's end are constant zeros
            running = xp.asarray(lengths)[None, :, None] > xp.arange(steps)[:, None, None]
            g_h = g_h * running
            g_c = None if g_c is None else g_c * running
        done = NotImplemented
        if mode == "LSTM" and w_hr is None and masks is None and g_c is None and xp is np:
            done = _native_recurrent.lstm_backward(g, named["gates"], named["c_prev"],
                                                   named["tanh_c"], w_hh, reverse=reverse)
        if done is not NotImplemented:
            dgi, gh, gc = done
            grads = {"dgi": dgi, "dgh": dgi, "dproj": None}
        else:
            grads, gh, gc = _reverse_loop(xp, cell, g, g_h, g_c, masks, named, w_hh, w_hr,
                                          reverse)
            dgi = grads["dgi"]
        flat = steps * batch
        gate_width = w_ih.shape[0]
        dgi2 = dgi.reshape(flat, gate_width)
        dgh2 = grads["dgh"].reshape(flat, gate_width)
        gx = (dgi2 @ w_ih).reshape(x.shape) if needs[0] else None
        gw_ih = dgi2.T @ x.reshape(flat, features) if needs[3] else None
        gw_hh = dgh2.T @ named["h_prev"].reshape(flat, width) if needs[4] else None
        gb_ih = dgi2.sum(axis=0) if needs[5] else None
        if not needs[6]:
            gb_hh = None
        elif gb_ih is not None and grads["dgh"] is dgi:  # both biases sit outside the gates
            gb_hh = gb_ih.copy()
        else:
            gb_hh = dgh2.sum(axis=0)
        gw_hr = None
        if w_hr is not None and needs[7]:
            gw_hr = grads["dproj"].reshape(flat, width).T @ named["h_raw"].reshape(flat, -1)
        return gx, gh if needs[1] else None, gc if needs[2] else None, gw_ih, gw_hh, gb_ih, \
            gb_hh, gw_hr

    return recurrent_layer_backward


def _reverse_loop(xp: Any, cell: Any, g: Any, g_h: Any, g_c: Any, masks: Any, named: Any,
                  w_hh: Any, w_hr: Any, reverse: bool) -> tuple[dict[str, Any], Any, Any]:
    """The generic reverse loop over the cell's ``backward_step``: ``(grads, gh0, gc0)``."""
    steps, batch, _ = g_h.shape
    width = g_h.shape[-1]
    gh = g[steps, :, :width].copy()
    gc = g[steps, :, width:].copy() if cell.has_cell_state else None
    co = cell.coefficients(xp, named)
    gate_width = w_hh.shape[0]
    dgi = xp.empty((steps, batch, gate_width), dtype=g.dtype)
    grads = {"dgi": dgi,
             "dgh": xp.empty_like(dgi) if cell.separate_hidden_grads() else dgi,
             "dproj": xp.empty((steps, batch, width), dtype=g.dtype) if w_hr is not None
             else None}
    for t in _order(steps, not reverse):
        gh += g_h[t]
        if g_c is not None:
            gc += g_c[t]
        running = masks[t] if masks is not None else None
        if running is not None:  # finished sequences pass the gradient straight through
            gh_past, gh = xp.where(running, 0, gh), xp.where(running, gh, 0)
            if gc is not None:
                gc_past, gc = xp.where(running, 0, gc), xp.where(running, gc, 0)
        gh, gc = cell.backward_step(xp, t, gh, gc, w_hh, w_hr, co, grads)
        if running is not None:
            gh += gh_past
            if gc is not None:
                gc += gc_past
    cell.finish_backward(grads)
    return grads, gh, gc


# First-order backward only (the grad rule calls it on raw arrays): one gradient per input.
RECURRENT_LAYER_BACKWARD = Op(
    "nn.recurrent_layer_backward", _recurrent_layer_backward_kernel, differentiable=False,
    doc="the gradients of nn.recurrent_layer's inputs by the reverse loop")


def reference_recurrent_layer(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any,
                              b_hh: Any, w_hr: Any, *, mode: str, reverse: bool = False,
                              lengths: tuple[int, ...] | None = None) -> Any:
    """``nn.recurrent_layer`` with differentiable Tensor ops, step by step (what
    ``create_graph=True`` differentiates, and a readable statement of what the op computes)."""
    import pullback

    cell = CELLS[mode]
    steps = x.shape[0]
    pre = x @ w_ih.mT
    bias = cell.input_bias(b_ih, b_hh)
    if bias is not None:
        pre = pre + bias
    masks = [None if m is None else pullback.tensor(m, device=x.device)
             for m in _step_masks(np, lengths, steps) or [None] * steps]
    outputs: list[Any] = [None] * steps
    h, c = h0, c0
    for t in _order(steps, reverse):
        h_new, c_new = cell.reference_step(pre[t], h, c, w_hh, b_hh, w_hr)
        state = [h_new] if c_new is None else [h_new, c_new]
        running = masks[t]
        if running is not None:
            state = [pullback.where(running, new, old) for new, old in zip(state, (h, c))]
            outputs[t] = pullback.cat([s * running for s in state], axis=-1)
        else:
            outputs[t] = pullback.cat(state, axis=-1)
        h, c = state[0], (state[1] if c_new is not None else None)
    outputs.append(pullback.cat([h] if c is None else [h, c], axis=-1))
    return pullback.stack(outputs, axis=0)


@RECURRENT_LAYER.def_grad
def _recurrent_layer_grad(F: Any, g: Any, out: Any, *inputs: Any, mode: str,
                          reverse: bool = False, lengths: tuple[int, ...] | None = None,
                          needs: Any, saved: Any = None) -> Any:
    attrs = {"mode": mode, "reverse": reverse, "lengths": lengths}
    if saved is not None and not F.differentiable:
        return op_in(F, RECURRENT_LAYER_BACKWARD)(g, out, *inputs, *saved, needs=needs, **attrs)
    import pullback
    from pullback.autograd import grad

    wanted = [i for i, need in enumerate(needs) if need]
    with pullback.enable_grad():
        replayed = reference_recurrent_layer(*inputs, **attrs)
    found = grad([replayed], [inputs[i] for i in wanted], [g], create_graph=True,
                 allow_unused=True)
    grads: list[Any] = [None] * len(inputs)
    for i, gi in zip(wanted, found):
        grads[i] = gi
    return tuple(grads)
