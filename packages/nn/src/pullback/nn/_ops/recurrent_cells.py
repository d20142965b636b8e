"""The step math of the recurrent cells (LSTM, GRU, Elman RNN with tanh or ReLU), one class per
cell, registered by PyTorch's mode name (``"LSTM"``, ``"GRU"``, ``"RNN_TANH"``, ``"RNN_RELU"``).

Each cell gives the recurrence driver of :mod:`.recurrent` four things:

* ``step``: one time step on arrays, in place in the buffers it allocated (``buffers``), which
  are what the backward reads (gate activations, previous states);
* ``coefficients``: everything the backward needs that does not depend on the incoming gradient,
  computed for all time steps at once (a few large array operations instead of a few small ones
  per step);
* ``backward_step``: one reverse step, linear in the incoming ``(gh, gc)``, writing the gradients
  of the gate pre-activations (``dgi`` for the input side, ``dgh`` for the hidden side) so that
  the weight gradients are one GEMM each over the whole sequence afterwards;
* ``reference_step``: the same step written with differentiable Tensor ops, the definition that
  ``create_graph=True`` differentiates (so higher derivatives are exact).

Weights and gate orders are PyTorch's: LSTM (i, f, g, o), GRU (r, z, n); ``w_hh`` is
(gates * H, P) with P the state width (``proj_size`` for a projected LSTM, else H).
"""

from __future__ import annotations

from typing import Any

import pullback

Arrays = dict[str, Any]


def _sigmoid_(xp: Any, a: Any) -> None:
    """``a = sigmoid(a)`` in place, as ``0.5 * tanh(a / 2) + 0.5``: four passes that never
    overflow (``1 / (1 + exp(-a))`` overflows exp for a < -709 in float64)."""
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5


class Cell:
    """One recurrent cell's step math (see the module docstring for the contract)."""

    mode: str
    gates: int  # weight blocks: 4 for LSTM, 3 for GRU, 1 for the Elman RNN
    has_cell_state: bool = False
    saved_names: tuple[str, ...]  # the buffers the backward reads, in this order

    def input_bias(self, b_ih: Any, b_hh: Any) -> Any:
        """The bias folded into the input projection of every step (both, by default)."""
        if b_ih is None or b_hh is None:
            return b_hh if b_ih is None else b_ih
        return b_ih + b_hh

    def buffers(self, xp: Any, pre: Any, state_width: int, projected: bool) -> Arrays:
        """What ``step`` records, for all steps; ``pre`` is the (T, B, gates*H) input projection
        (the steps turn it into the gate activations in place)."""
        t, b, _ = pre.shape
        return {"gates": pre, "h_prev": xp.empty((t, b, state_width), dtype=pre.dtype)}

    def step(self, xp: Any, t: int, h: Any, c: Any, w_hh_t: Any, b_hh: Any, w_hr_t: Any,
             buf: Arrays) -> tuple[Any, Any]:
        """Step ``t`` from state ``(h, c)``: returns the new ``(h, c)`` (``c`` None without a
        cell state). ``w_hh_t`` and ``w_hr_t`` are the transposed weights, made contiguous
        once per sequence (a GEMM with a transposed operand measured 1.6x slower in
        OpenBLAS at these shapes)."""
        raise NotImplementedError

    def coefficients(self, xp: Any, saved: Arrays) -> Arrays:
        """The backward's gradient-independent factors for every step."""
        raise NotImplementedError

    def backward_step(self, xp: Any, t: int, gh: Any, gc: Any, w_hh: Any, w_hr: Any,
                      co: Arrays, grads: Arrays) -> tuple[Any, Any]:
        """Reverse step ``t``: from the gradients of its output state ``(gh, gc)`` (owned,
        writable), write ``grads["dgi"][t]`` and ``grads["dgh"][t]`` and return the gradients
        of the previous state."""
        raise NotImplementedError

    def finish_backward(self, grads: Arrays) -> None:
        """After the reverse loop (GRU completes ``dgi`` from ``dgh`` there)."""

    def separate_hidden_grads(self) -> bool:
        """Whether ``dgh`` differs from ``dgi`` (the hidden bias sits inside a gate)."""
        return False

    def reference_step(self, pre: Any, h: Any, c: Any, w_hh: Any, b_hh: Any,
                       w_hr: Any) -> tuple[Any, Any]:
        """``step`` with differentiable Tensor ops (``pre``: this step's input projection with
        ``input_bias`` added)."""
        raise NotImplementedError


class LSTMCell(Cell):
    """``c' = f*c + i*g``, ``h' = o*tanh(c')`` (then ``h' @ w_hr.T`` with a projection)."""

    mode = "LSTM"
    gates = 4
    has_cell_state = True
    saved_names = ("gates", "h_prev", "c_prev", "tanh_c", "h_raw")

    def buffers(self, xp: Any, pre: Any, state_width: int, projected: bool) -> Arrays:
        buf = super().buffers(xp, pre, state_width, projected)
        t, b, g4 = pre.shape
        hidden = g4 // 4
        for name in ("c_prev", "tanh_c"):
            buf[name] = xp.empty((t, b, hidden), dtype=pre.dtype)
        buf["h_raw"] = xp.empty((t, b, hidden), dtype=pre.dtype) if projected else None
        # sigmoid(a) = 0.5 tanh(a/2) + 0.5 and tanh(a) in one pass over all four gates:
        # scale by 1/2 (i, f, o) or 1 (g), tanh, scale again, shift by 1/2 (i, f, o) or 0 (g).
        scale = xp.full((4, hidden), 0.5, dtype=pre.dtype)
        scale[2] = 1.0
        buf["scale"] = scale.reshape(-1)
        buf["shift"] = (scale.reshape(-1) * (scale.reshape(-1) != 1.0)).astype(pre.dtype)
        return buf

    def step(self, xp: Any, t: int, h: Any, c: Any, w_hh_t: Any, b_hh: Any, w_hr_t: Any,
             buf: Arrays) -> tuple[Any, Any]:
        buf["h_prev"][t] = h
        buf["c_prev"][t] = c
        gates = buf["gates"][t]
        gates += h @ w_hh_t
        gates *= buf["scale"]
        xp.tanh(gates, out=gates)
        gates *= buf["scale"]
        gates += buf["shift"]
        hidden = c.shape[-1]
        i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c_new = f * c
        c_new += i * g
        tanh_c = buf["tanh_c"][t]
        xp.tanh(c_new, out=tanh_c)
        h_new = o * tanh_c
        if w_hr_t is not None:
            buf["h_raw"][t] = h_new
            h_new = h_new @ w_hr_t
        return h_new, c_new

    def coefficients(self, xp: Any, saved: Arrays) -> Arrays:
        acts = saved["gates"]
        t, b, g4 = acts.shape
        a = acts.reshape(t, b, 4, g4 // 4)
        tanh_c = saved["tanh_c"]
        # The activations' derivatives from their values: a(1 - a) for the sigmoids (i, f, o),
        # 1 - a^2 for tanh (g): with per-gate constants, (k1 - a) * a + k0.
        k1 = xp.asarray([1.0, 1.0, 0.0, 1.0], dtype=acts.dtype)[:, None]
        k0 = xp.asarray([0.0, 0.0, 1.0, 0.0], dtype=acts.dtype)[:, None]
        deriv = (k1 - a) * a
        deriv += k0
        # d(pre-activation) = [gc * g, gc * c_prev, gc * i, gh * tanh(c)] * deriv
        coef = xp.empty_like(a)
        coef[:, :, 0] = a[:, :, 2]
        coef[:, :, 1] = saved["c_prev"]
        coef[:, :, 2] = a[:, :, 0]
        coef[:, :, 3] = tanh_c
        coef *= deriv
        through_h = 1.0 - tanh_c * tanh_c  # dh'/dc' = o * (1 - tanh(c')^2)
        through_h *= a[:, :, 3]
        return {"coef": coef, "through_h": through_h, "forget": a[:, :, 1]}

    def backward_step(self, xp: Any, t: int, gh: Any, gc: Any, w_hh: Any, w_hr: Any,
                      co: Arrays, grads: Arrays) -> tuple[Any, Any]:
        if w_hr is not None:
            grads["dproj"][t] = gh
            gh = gh @ w_hr
        gc += gh * co["through_h"][t]
        d = grads["dgi"][t].reshape(gh.shape[0], 4, gc.shape[-1])  # -1 fails for batch 0
        coef = co["coef"][t]
        xp.multiply(gc[:, None, :], coef[:, :3], out=d[:, :3])
        xp.multiply(gh, coef[:, 3], out=d[:, 3])
        gc *= co["forget"][t]
        return grads["dgi"][t] @ w_hh, gc

    def reference_step(self, pre: Any, h: Any, c: Any, w_hh: Any, b_hh: Any,
                       w_hr: Any) -> tuple[Any, Any]:
        i, f, g, o = (pre + h @ w_hh.mT).chunk(4, axis=-1)
        c_new = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h_new = o.sigmoid() * c_new.tanh()
        if w_hr is not None:
            h_new = h_new @ w_hr.mT
        return h_new, c_new


class GRUCell(Cell):
    """``r, z = sigmoid(...)``, ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``,
    ``h' = (1 - z) * n + z * h`` (PyTorch's formulation: the reset gate multiplies the hidden
    projection including its bias)."""

    mode = "GRU"
    gates = 3
    saved_names = ("gates", "h_prev", "hidden_n")

    def input_bias(self, b_ih: Any, b_hh: Any) -> Any:
        return b_ih  # b_hh sits inside the new gate, so it is added at each step

    def separate_hidden_grads(self) -> bool:
        return True

    def buffers(self, xp: Any, pre: Any, state_width: int, projected: bool) -> Arrays:
        buf = super().buffers(xp, pre, state_width, projected)
        buf["hidden_n"] = xp.empty_like(buf["h_prev"])
        return buf

    def step(self, xp: Any, t: int, h: Any, c: Any, w_hh_t: Any, b_hh: Any, w_hr_t: Any,
             buf: Arrays) -> tuple[Any, Any]:
        buf["h_prev"][t] = h
        hidden = h.shape[-1]
        gi = buf["gates"][t]
        gh = h @ w_hh_t
        if b_hh is not None:
            gh += b_hh
        rz = gi[:, :2 * hidden]
        rz += gh[:, :2 * hidden]
        _sigmoid_(xp, rz)
        r, z = gi[:, :hidden], gi[:, hidden:2 * hidden]
        hidden_n = buf["hidden_n"][t]
        hidden_n[...] = gh[:, 2 * hidden:]
        n = gi[:, 2 * hidden:]
        n += r * hidden_n
        xp.tanh(n, out=n)
        h_new = h - n
        h_new *= z
        h_new += n
        return h_new, None

    def coefficients(self, xp: Any, saved: Arrays) -> Arrays:
        acts = saved["gates"]
        hidden = acts.shape[-1] // 3
        r, z, n = acts[..., :hidden], acts[..., hidden:2 * hidden], acts[..., 2 * hidden:]
        d_new = (1.0 - z) * (1.0 - n * n)  # dh'/d(n's pre-activation)
        d_update = (saved["h_prev"] - n) * z * (1.0 - z)  # dh'/d(z's pre-activation)
        d_reset = saved["hidden_n"] * r * (1.0 - r)  # d(n's pre-activation)/d(r's)
        return {"new": d_new, "update": d_update, "reset": d_reset, "r": r, "z": z}

    def backward_step(self, xp: Any, t: int, gh: Any, gc: Any, w_hh: Any, w_hr: Any,
                      co: Arrays, grads: Arrays) -> tuple[Any, Any]:
        hidden = gh.shape[-1]
        d_in, d_hid = grads["dgi"][t], grads["dgh"][t]
        d_n = d_in[:, 2 * hidden:]
        xp.multiply(gh, co["new"][t], out=d_n)
        xp.multiply(gh, co["update"][t], out=d_hid[:, hidden:2 * hidden])
        xp.multiply(d_n, co["reset"][t], out=d_hid[:, :hidden])
        xp.multiply(d_n, co["r"][t], out=d_hid[:, 2 * hidden:])
        g_prev = d_hid @ w_hh
        g_prev += gh * co["z"][t]
        return g_prev, None

    def finish_backward(self, grads: Arrays) -> None:
        # the reset and update gates see x and h through the same pre-activation
        hidden2 = 2 * grads["dgi"].shape[-1] // 3
        grads["dgi"][..., :hidden2] = grads["dgh"][..., :hidden2]

    def reference_step(self, pre: Any, h: Any, c: Any, w_hh: Any, b_hh: Any,
                       w_hr: Any) -> tuple[Any, Any]:
        gh = h @ w_hh.mT
        if b_hh is not None:
            gh = gh + b_hh
        i_r, i_z, i_n = pre.chunk(3, axis=-1)
        h_r, h_z, h_n = gh.chunk(3, axis=-1)
        r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        return (1.0 - z) * n + z * h, None


class ElmanCell(Cell):
    """``h' = act(x W_ih + b_ih + h W_hh + b_hh)`` with ``act`` tanh or ReLU."""

    gates = 1
    saved_names = ("gates", "h_prev")

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def step(self, xp: Any, t: int, h: Any, c: Any, w_hh_t: Any, b_hh: Any, w_hr_t: Any,
             buf: Arrays) -> tuple[Any, Any]:
        buf["h_prev"][t] = h
        a = buf["gates"][t]
        a += h @ w_hh_t
        if self.mode == "RNN_TANH":
            xp.tanh(a, out=a)
        else:
            xp.maximum(a, 0, out=a)
        return a, None

    def coefficients(self, xp: Any, saved: Arrays) -> Arrays:
        h_new = saved["gates"]
        if self.mode == "RNN_TANH":
            return {"deriv": 1.0 - h_new * h_new}
        return {"deriv": (h_new > 0).astype(h_new.dtype)}

    def backward_step(self, xp: Any, t: int, gh: Any, gc: Any, w_hh: Any, w_hr: Any,
                      co: Arrays, grads: Arrays) -> tuple[Any, Any]:
        d = grads["dgi"][t]
        xp.multiply(gh, co["deriv"][t], out=d)
        return d @ w_hh, None

    def reference_step(self, pre: Any, h: Any, c: Any, w_hh: Any, b_hh: Any,
                       w_hr: Any) -> tuple[Any, Any]:
        a = pre + h @ w_hh.mT
        return (a.tanh() if self.mode == "RNN_TANH" else pullback.relu(a)), None


CELLS: dict[str, Cell] = {
    cell.mode: cell
    for cell in (LSTMCell(), GRUCell(), ElmanCell("RNN_TANH"), ElmanCell("RNN_RELU"))
}
"""The cells by PyTorch's mode name."""
