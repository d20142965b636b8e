"""One fuzz case of an nn native kernel's entry point (``pullback/nn/_ops/_native.py``) against
the NumPy fallback, run in a worker process by ``test_native_fuzz.py`` (see
:mod:`pullback.testing.isolation`): a crash there is a failing case, not a dead pytest.

A case is a JSON dict: ``entry`` names the entry point, the other keys its arguments (shapes,
geometry, dtypes, memory layouts, a seed for the values). :func:`run_case` returns ``None`` when
the entry point behaved, else what was wrong. Behaving means: for arguments that are valid (an
independent check here, not the validation layer under test) the native result, or
``NotImplemented``, and the fallback agree; for invalid ones both refuse with a typed pullback
error (or NumPy's MemoryError/ValueError for a size no array can have, which valid arguments
may also meet); nothing else.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import pullback.nn  # noqa: F401 - registers the ops
from pullback.errors import PullbackError
from pullback.nn._ops import (_native, _native_attention, _native_recurrent, attention, conv,
                              cross_entropy, geometry, norm, recurrent, softmax)
from pullback.nn._ops.recurrent_cells import CELLS
from pullback.testing.layouts import fuzz_values, laid_out

_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_INDEX_MAX = 2 ** 62


def make_array(shape: list[int], dtype: str, layout: str, seed: int, special: bool) -> Any:
    """The case's values (:func:`pullback.testing.layouts.fuzz_values`) in its layout."""
    return laid_out(fuzz_values(tuple(shape), dtype, seed, special), layout)


def _no_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is NumPy refusing an allocation no machine can make."""
    return isinstance(exc, MemoryError) or (isinstance(exc, ValueError) and (
        "too big" in str(exc) or "maximum" in str(exc).lower()))


def _outcome(call: Any) -> tuple[str, Any]:
    """``("value", result)``, ``("refused", error)`` or ``("raised", error)`` for ``call()``."""
    try:
        return "value", call()
    except PullbackError as exc:
        return "refused", exc
    except (MemoryError, ValueError) as exc:
        return ("refused" if _no_memory(exc) else "raised"), exc
    except Exception as exc:  # noqa: BLE001 - reported
        return "raised", exc


def _describe(kind: str, value: Any) -> str:
    if kind == "value":
        return "NotImplemented" if value is NotImplemented else f"an array {getattr(value, 'shape', value)}"
    return f"{type(value).__name__}: {value}"


def _compare(native: tuple[str, Any], fallback: tuple[str, Any], valid: bool,
             exact: bool, rtol: float = 2e-5, atol: float = 1e-6,
             finite_only: bool = False, slack: Any = None) -> str | None:
    """``None`` when the two outcomes agree. Values agree within ``rtol`` and ``atol`` times the
    largest finite magnitude of the fallback's (sums of many terms round differently in C and
    NumPy), plus ``slack`` (an array of the values' shape: the rounding a case's own arithmetic
    allows each element) where given; with ``finite_only`` elements either side makes
    non-finite or huge (overflowing sums of the inputs' 1e38s, in a different order) are not
    compared."""
    for name, (kind, value) in (("native", native), ("fallback", fallback)):
        if kind == "raised":
            return f"{name} raised an untyped {_describe(kind, value)}"
        # valid arguments may still need more memory than any machine has (col2im's NumPy
        # fallback pads the image: a padding of 2^31 asks for hundreds of GiB)
        if valid and kind == "refused" and not _no_memory(value):
            return f"{name} refused valid arguments: {_describe(kind, value)}"
        if not valid and kind == "value" and value is not NotImplemented:
            return f"{name} accepted invalid arguments and returned {_describe(kind, value)}"
    if native[0] == "value" and native[1] is not NotImplemented and fallback[0] == "value":
        a, b = np.asarray(native[1]), np.asarray(fallback[1])
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"native gave {a.shape} {a.dtype}, fallback {b.shape} {b.dtype}"
        if exact:
            same = np.array_equal(a, b, equal_nan=True)
        else:
            with np.errstate(all="ignore"):
                a, b = a.astype(np.float64), b.astype(np.float64)
                if finite_only:
                    keep = np.isfinite(a) & np.isfinite(b) & (np.abs(b) < 1e30) & (np.abs(a) < 1e30)
                    a, b = a[keep], b[keep]
                    slack = None if slack is None else slack[keep]
                moderate = np.abs(b[np.isfinite(b) & (np.abs(b) < 1e30)])
                scale = max(float(moderate.max()) if moderate.size else 0.0, 1.0)
                allowed = atol * scale if slack is None else atol * scale + slack
                same = bool(np.isclose(a, b, rtol=rtol, atol=allowed, equal_nan=True).all())
        if not same:
            with np.errstate(all="ignore"):
                worst = np.nanmax(np.abs(a.astype(np.float64) - b)) if a.size else 0
            return f"native and fallback differ (max |difference| {worst:.3g})"
    return None


def _geometry_valid(shape: tuple[int, ...], kernel: Any, stride: Any, padding: Any,
                    dilation: Any, out_hw: Any) -> bool:
    """The oracle of validity: PyTorch's rules, written out independently of geometry.py."""
    pairs = [kernel, stride, dilation, padding[0], padding[1], out_hw]
    if len(shape) != 4 or any(len(p) != 2 for p in pairs):
        return False
    if any(not _INT64[0] <= v <= _INT64[1] for p in pairs for v in p):
        return False
    if min(kernel) < 1 or min(stride) < 1 or min(dilation) < 1:
        return False
    if min(padding[0] + padding[1]) < 0:
        return False
    for a in range(2):
        padded = shape[2 + a] + padding[a][0] + padding[a][1]
        if padded > _INDEX_MAX:
            return False
        out = (padded - dilation[a] * (kernel[a] - 1) - 1) // stride[a] + 1
        if out < 1 or out != out_hw[a]:
            return False
    return True


def _pairs(case: dict[str, Any]) -> tuple[Any, ...]:
    return (tuple(case["kernel"]), tuple(case["stride"]),
            tuple(tuple(p) for p in case["padding"]), tuple(case["dilation"]),
            tuple(case["out_hw"]))


def _im2col(case: dict[str, Any]) -> str | None:
    kernel, stride, padding, dilation, out_hw = _pairs(case)
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    valid = _geometry_valid(x.shape, kernel, stride, padding, dilation, out_hw)
    native = _outcome(lambda: _native.im2col(x, kernel, out_hw, stride, padding, dilation))

    def fallback() -> Any:  # the NumPy path of the conv kernels: checked, padded, viewed
        geometry.check_output_size("im2col", tuple(x.shape), kernel, stride, padding, dilation,
                                   out_hw)
        return conv.windows(np, conv.pad_input(np, x, padding), kernel, stride, dilation,
                            out_hw).copy()

    fallback = _outcome(fallback)
    return _compare(native, fallback, valid, exact=True)


def _col2im(case: dict[str, Any]) -> str | None:
    kernel, stride, padding, dilation, out_hw = _pairs(case)
    n, c, h, w = case["shape"]
    cols_shape = [n, c, *kernel, *out_hw]
    if any(not 0 <= s <= 2 ** 20 for s in cols_shape) or np.prod(cols_shape, dtype=object) > 2 ** 22:
        cols_shape = [n, c, 1, 1, 1, 1]  # no such array can be made: the geometry disagrees
    cols = make_array(cols_shape, case["dtype"], case["layout"], case["seed"], case["special"])
    ck, co = tuple(cols.shape[2:4]), tuple(cols.shape[4:])
    valid = _geometry_valid((n, c, h, w), ck, stride, padding, dilation, co)

    def fallback() -> Any:  # the NumPy path of conv2d_input_grad: checked, then col2im
        geometry.check_output_size("col2im", (n, c, h, w), ck, stride, padding, dilation, co)
        (pt, pb), (pl, pr) = padding
        dxpad = np.zeros((n, c, h + pt + pb, w + pl + pr), dtype=cols.dtype)
        conv.add_windows(np, dxpad, cols, stride, dilation)
        return conv.crop(np, dxpad, padding, (h, w))

    native = _outcome(lambda: _native.col2im(cols, (h, w), stride, padding, dilation))
    return _compare(native, _outcome(fallback), valid, exact=False)


def _softmax(case: dict[str, Any]) -> str | None:
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    axis, scale, causal = case["axis"], case["scale"], case["causal"]
    numpy_softmax = softmax._softmax_kernel(np).__wrapped__
    in_place = case["in_place"]

    def native() -> Any:
        target = x.copy() if in_place else x
        return _native.softmax(target, axis=axis, scale=scale, causal=causal,
                               out=target if in_place else None)

    def fallback() -> Any:
        if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
            raise IndexError(axis)
        s = x * np.float32(scale) if x.dtype == np.float32 else x * scale
        if causal and x.ndim >= 2:
            s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
        return numpy_softmax(s.astype(x.dtype), axis=axis % max(x.ndim, 1))

    n = _outcome(native)
    if n[0] == "raised":
        return f"native raised {_describe(*n)}"
    if n[0] != "value" or n[1] is NotImplemented:
        return None
    if causal and x.ndim < 2:
        return "native took a causal mask without a query axis"
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        return f"native took axis {axis} of a {x.ndim}-d input"
    return _compare(n, _outcome(fallback), valid=True, exact=False,
                    finite_only=case["special"])


def _softmax_backward(case: dict[str, Any]) -> str | None:
    y = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    gy = make_array(case["other_shape"], case["dtype"], case["other_layout"], case["seed"] + 1,
                    False)
    axis = case["axis"]
    numpy_backward = softmax._softmax_backward_kernel(np).__wrapped__
    n = _outcome(lambda: _native.softmax_backward(gy, y, axis=axis))
    if n[0] == "raised":
        return f"native raised {_describe(*n)}"
    if n[1] is NotImplemented:
        return None
    if not -max(y.ndim, 1) <= axis < max(y.ndim, 1):
        return f"native took axis {axis} of a {y.ndim}-d input"
    f = _outcome(lambda: numpy_backward(gy, y, axis=axis))
    if f[0] != "value":
        return f"native accepted what the fallback refused: {_describe(*f)}"
    rows = _ordinary_rows(y, 1) & _ordinary_rows(gy, 1)  # a row's sum decides all of it
    # y is any array here, not a softmax's output: its row's sum(gy * y) may cancel terms far
    # larger than itself, which C and NumPy add in different orders, and each element is y times
    # that sum's rounding (a seed drew rows of |y| up to 8 whose results differed by 1.9e-4)
    with np.errstate(all="ignore"):
        terms = np.abs(gy.astype(np.float64) * y).sum(axis=-1, keepdims=True)
        slack = 8 * np.finfo(y.dtype).eps * terms * np.abs(y.astype(np.float64))
    return _compare(("value", n[1][rows]), ("value", f[1][rows]), valid=True, exact=False,
                    slack=slack[rows])



def _log_softmax(case: dict[str, Any]) -> str | None:
    """The forward and the backward entry points (the backward on the forward's output)."""
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    g = make_array(case["other_shape"], case["dtype"], case["other_layout"], case["seed"] + 1,
                   False)
    axis = case["axis"]
    numpy_forward = softmax._log_softmax_kernel(np).__wrapped__
    n = _outcome(lambda: _native.log_softmax(x, axis=axis))
    if n[0] == "raised":
        return f"forward: native raised {_describe(*n)}"
    if n[1] is not NotImplemented:
        if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
            return f"forward: native took axis {axis} of a {x.ndim}-d input"
        problem = _compare(n, _outcome(lambda: numpy_forward(x, axis=axis)), valid=True,
                           exact=False, finite_only=case["special"])
        if problem:
            return f"forward: {problem}"
    fits = x.dtype.kind == "f" and -x.ndim <= axis < x.ndim
    y = numpy_forward(x, axis=axis) if fits else x
    b = _outcome(lambda: _native.log_softmax_backward(g, y, axis=axis))
    if b[0] == "raised":
        return f"backward: native raised {_describe(*b)}"
    if b[1] is NotImplemented:
        return None
    if g.shape != y.shape:
        return f"backward: native took a gradient {g.shape} for an output {y.shape}"
    rows = _ordinary_rows(y, 1)  # a row's sum decides all of it
    g64, y64 = g[rows].astype(np.float64), y[rows].astype(np.float64)
    expected = g64 - np.exp(y64) * g64.sum(axis=-1, keepdims=True)
    # g - exp(y) * sum(g) cancels (to 0 where g is constant along the row): the rounding of
    # the sum and of exp bound the difference, relative to the terms, not to the result.
    terms = np.abs(g64) + np.exp(y64) * np.abs(g64).sum(axis=-1, keepdims=True)
    bound = 1e-5 * np.abs(expected) + 16 * np.finfo(y.dtype).eps * terms + 1e-30
    bad = np.abs(b[1][rows] - expected) > bound
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        return f"backward: native {b[1][rows][where]!r}, float64 {expected[where]!r} at {where}"
    return None


def _class_targets(case: dict[str, Any], rows: int, cols: int) -> Any:
    rng = np.random.default_rng(case["seed"] + 2)
    low, high = (-1, cols + 1) if case["targets"] == "out_of_range" else (0, max(cols, 1))
    target = rng.integers(low, high, size=case["target_rows"] if case["target_rows"] >= 0
                          else rows)
    target[rng.random(target.shape) < 0.2] = case["ignore_index"]
    return target.astype(case["target_dtype"])


def _cross_entropy(case: dict[str, Any]) -> str | None:
    """Forward and backward entry points. Targets the functional layer would refuse (outside
    0..C-1, not ignore_index) must not crash them: they give NaN losses."""
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    rows, cols = (x.shape + (0, 0))[:2]
    target = _class_targets(case, rows, cols)
    ignore = case["ignore_index"]
    numpy_forward = cross_entropy._cross_entropy_kernel(np).__wrapped__
    n = _outcome(lambda: _native.cross_entropy(x, target, ignore_index=ignore))
    if n[0] == "raised":
        return f"forward: native raised {_describe(*n)}"
    if n[1] is NotImplemented:
        return None
    if x.ndim != 2 or target.shape != (rows,):
        return f"native took logits {x.shape} with targets {target.shape}"
    loss, (stats,) = n[1]
    bad = (target != ignore) & ((target < 0) | (target >= cols))
    if not np.isnan(loss[bad]).all():
        return "an out-of-range target did not give a NaN loss"
    ok = ~bad & _ordinary_rows(x, 1)
    g = np.random.default_rng(case["seed"] + 3).standard_normal(rows).astype(x.dtype)
    back = _outcome(lambda: _native.cross_entropy_backward(g, x, target, stats,
                                                          ignore_index=ignore))
    if back[0] == "raised":
        return f"backward: native raised {_describe(*back)}"
    safe = np.where(bad, ignore, target)  # what the fallback can index
    want_loss, (want_stats,) = numpy_forward(x[ok], safe[ok], ignore_index=ignore)
    for got, want, what in ((loss[ok], want_loss, "loss"), (stats[ok], want_stats, "stats")):
        problem = _compare(("value", got), ("value", want), valid=True, exact=False)
        if problem:
            return f"forward {what}: {problem}"
    if back[1] is NotImplemented:
        return "the backward refused the forward's own output"
    p = np.exp(x[ok].astype(np.float64) - want_stats[:, :1] - want_stats[:, 1:])
    valid = safe[ok] != ignore
    p[np.flatnonzero(valid), safe[ok][valid].astype(np.int64)] -= 1
    expected = (p * np.where(valid, g[ok], 0)[:, None]).astype(x.dtype)
    return _compare(("value", back[1][ok]), ("value", expected), valid=True, exact=False)


def _lstm_reference(pre: Any, h0: Any, c0: Any, w_hh_t: Any, reverse: bool) -> Any:
    """The LSTM layer's output (T+1, B, 2H) from its input projection, in float64."""
    steps, hidden = pre.shape[0], h0.shape[-1]
    h, c = h0.astype(np.float64), c0.astype(np.float64)
    out = np.empty((steps + 1,) + h.shape[:1] + (2 * hidden,))
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        a = pre[t] + h @ w_hh_t.astype(np.float64)
        i, f, g, o = (a[:, k * hidden:(k + 1) * hidden] for k in range(4))
        sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        out[t] = np.concatenate([h, c], axis=-1)
    out[steps] = out[0 if reverse else steps - 1]
    return out


def _lstm(case: dict[str, Any]) -> str | None:
    """The LSTM layer's native loops (``_native_recurrent``): the forward against a float64
    reference, then the backward from its buffers against the generic reverse loop; operands of
    other dtypes, layouts or (when ``wrong`` names one) shapes must be declined."""
    steps, batch, hidden, wrong = case["steps"], case["batch"], case["hidden"], case["wrong"]
    dtype, seed = case["dtype"], case["seed"]

    def operand(name: str, shape: tuple[int, ...], layout: str = "contiguous",
                special: bool = False) -> Any:
        if name == wrong:
            shape = shape[:-1] + (shape[-1] + 1,)
        return make_array(list(shape), dtype, layout, seed + len(name), special) * 0.3

    pre = operand("pre", (steps, batch, 4 * hidden), case["layout"], case["special"])
    h0, c0 = operand("h0", (batch, hidden), case["other_layout"]), operand("c0", (batch, hidden))
    w_hh_t = operand("w_hh_t", (hidden, 4 * hidden))
    reverse = case["reverse"]
    expected_pre = pre.astype(np.float64)
    n = _outcome(lambda: _native_recurrent.lstm_forward(pre, h0, c0, w_hh_t, reverse=reverse))
    if n[0] != "value":
        return f"forward: native raised {_describe(*n)}"
    if n[1] is NotImplemented:
        return None
    if wrong in ("pre", "h0", "c0", "w_hh_t") or dtype != "float32" or steps == 0:
        return f"forward: native took a wrong {wrong} ({dtype}, {steps} steps)"
    out, (acts, h_prev, c_prev, tanh_c, _) = n[1]
    problem = _compare(("value", out), ("value", _lstm_reference(expected_pre, h0, c0, w_hh_t,
                                                                   reverse).astype(out.dtype)),
                       valid=True, exact=False, rtol=1e-4, atol=1e-5,
                       finite_only=case["special"])
    if problem:
        return f"forward: {problem}"
    g = operand("g", (steps + 1, batch, 2 * hidden), case["other_layout"])
    g[:steps, :, hidden:] = 0 if g.flags.writeable else g[:steps, :, hidden:]
    if case["other_layout"] == "broadcast":
        g = np.ascontiguousarray(g)
        g[:steps, :, hidden:] = 0
    w_hh = np.ascontiguousarray(w_hh_t.T)
    if wrong == "c_prev":
        c_prev = c_prev[:, :, :-1]
    b = _outcome(lambda: _native_recurrent.lstm_backward(g, acts, c_prev, tanh_c, w_hh,
                                                        reverse=reverse))
    if b[0] != "value":
        return f"backward: native raised {_describe(*b)}"
    if b[1] is NotImplemented:
        return None if wrong in ("g", "c_prev") else "backward declined its forward's buffers"
    if wrong in ("g", "c_prev"):
        return f"backward: native took a wrong {wrong}"
    if case["special"]:
        return None  # NaN and infinities spread through the whole sequence: not crashing is it
    named = {"gates": acts, "h_prev": h_prev, "c_prev": c_prev, "tanh_c": tanh_c}
    grads, gh, gc = recurrent._reverse_loop(np, CELLS["LSTM"], g, g[:steps, :, :hidden], None,
                                            None, named, w_hh, None, reverse)
    for got, want, what in zip(b[1], (grads["dgi"], gh, gc), ("dgates", "gh0", "gc0")):
        problem = _compare(("value", got), ("value", want), valid=True, exact=False,
                           rtol=1e-4, atol=1e-5)
        if problem:
            return f"backward {what}: {problem}"
    return None

def _param(case: dict[str, Any], key: str, shape: tuple[int, ...], seed: int) -> Any:
    choice = case[key]
    if choice == "none":
        return None
    if choice == "wrong":
        shape = tuple(s + 1 for s in shape) or (2,)
    return make_array(list(shape), case["dtype"], "contiguous", seed, False)


def _layer_norm(case: dict[str, Any]) -> str | None:
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    nd = case["normalized_ndim"]
    normalized = x.shape[x.ndim - nd:] if 0 < nd <= x.ndim else (3,)
    w, b = _param(case, "w", normalized, case["seed"] + 1), _param(case, "b", normalized, 2)
    numpy_ln = norm._layer_norm_kernel(np).__wrapped__
    n = _outcome(lambda: _native.layer_norm(x, w, b, normalized_ndim=nd, eps=case["eps"]))
    if n[0] == "raised":
        return f"native raised {_describe(*n)}"
    if n[1] is NotImplemented:
        return None
    f = _outcome(lambda: numpy_ln(x, w, b, normalized_ndim=nd, eps=case["eps"]))
    if f[0] != "value":
        return f"native accepted what the fallback refused: {_describe(*f)}"
    rows = _ordinary_rows(x, nd)
    (y, (mean, rstd)), (y0, (mean0, rstd0)) = n[1], f[1]
    for got, want, what in ((mean, mean0, "mean"), (rstd, rstd0, "rstd")):
        problem = _compare(("value", got[rows]), ("value", want[rows]), valid=True, exact=False,
                           rtol=1e-4, atol=1e-6)
        if problem:
            return f"{what}: {problem}"
    # y = (x - mean) * rstd * w + b: float32 rounds x - mean to eps * |x|, which rstd magnifies
    # where a row barely varies (broadcast rows: all equal, 0 / 0 but for eps).
    y, y0 = y[rows].astype(np.float64), y0[rows].astype(np.float64)
    noise = (np.abs(x[rows]) + np.abs(mean0[rows])) * rstd0[rows] * (1 if w is None else np.abs(w))
    bound = 1e-4 * np.abs(y0) + 32 * 2.0 ** -23 * noise + 1e-6
    bad = ~((np.abs(y - y0) <= bound) | (np.isnan(y) & np.isnan(y0)) | (y == y0))
    if bad.any():
        where = tuple(np.argwhere(bad)[0])
        return f"y: native {y[where]!r} and fallback {y0[where]!r} differ at {where}"
    return None


def _ordinary_rows(x: Any, nd: int) -> Any:
    """The rows (leading indices) of ``x`` without NaN, infinities or magnitudes above 1e30:
    a row holding +1e38 and -1e38 has a mean that float32 and float64 (in any order of
    summation) both lose, differently. Rows with them are tested for not crashing only."""
    # The row length spelled out: -1 cannot be inferred when a leading axis is empty.
    lead = x.reshape(x.shape[:x.ndim - nd] + (int(np.prod(x.shape[x.ndim - nd:])),))
    with np.errstate(all="ignore"):
        return (np.isfinite(lead) & (np.abs(lead) < 1e30)).all(axis=-1)


def _layer_norm_backward(case: dict[str, Any]) -> str | None:
    x = make_array(case["shape"], case["dtype"], case["layout"], case["seed"], case["special"])
    nd = case["normalized_ndim"]
    g = make_array(case["other_shape"], case["dtype"], case["other_layout"], case["seed"] + 1,
                   False)
    normalized = x.shape[x.ndim - nd:] if 0 < nd <= x.ndim else (3,)
    w = _param(case, "w", normalized, case["seed"] + 2)
    kept = x.shape[:x.ndim - nd] + (1,) * nd if 0 < nd <= x.ndim else (1,)
    if case["stats"] == "wrong":
        kept = tuple(s + 1 for s in kept)
    rng = np.random.default_rng(case["seed"] + 3)
    mean = rng.standard_normal(kept).astype(case["dtype"])
    rstd = (rng.random(kept) + 0.5).astype(case["dtype"])
    numpy_backward = norm._layer_norm_backward_kernel(np).__wrapped__
    n = _outcome(lambda: _native.layer_norm_backward(g, x, w, mean, rstd, normalized_ndim=nd))
    if n[0] == "raised":
        return f"native raised {_describe(*n)}"
    if n[1] is NotImplemented:
        return None
    f = _outcome(lambda: numpy_backward(g, x, w, mean, rstd, normalized_ndim=nd))
    if f[0] != "value":
        return f"native accepted what the fallback refused: {_describe(*f)}"
    rows = _ordinary_rows(x, nd) & _ordinary_rows(g, nd)
    for got, want, what in zip(n[1], f[1], ("gx", "gw", "gb")):
        if got is not None and what != "gx":
            if not rows.all():
                continue  # column sums over every row: a huge row decides them
            rows_of = slice(None)
        else:
            rows_of = rows
        if got is None or want is None:
            if (got is None) != (want is None):
                return f"{what}: given by one side only"
            continue
        problem = _compare(("value", got[rows_of]), ("value", want[rows_of]), valid=True,
                           exact=False, rtol=1e-4, atol=2e-5)
        if problem:
            return f"{what}: {problem}"
    return None


# Scores of scale-3 values over up to 17 features reach |s| ~ 50 before the softmax: float32's
# rounding there (FMA in C, another order in BLAS) moves the weights by ~1e-5 relative.
_ATTENTION_TOL = {"rtol": 1e-4, "atol": 1e-5}


def _weights_slack(weights: Any, v: Any) -> Any:
    """What each output element may differ by through its weights' rounding: a weight may be
    off by ``rtol`` of itself, or by float32's smallest normal (the C kernel's exp flushes a
    weight of 1e-41 to 0, NumPy's keeps it), and the output adds weight times value: a 1e38
    among the special values turns that flushed weight into a difference of 3.5e-4 (seed 146)."""
    with np.errstate(all="ignore"):
        moved = np.abs(weights.astype(np.float64)) * _ATTENTION_TOL["rtol"] \
            + np.finfo(np.float32).tiny
        return moved @ np.abs(v.astype(np.float64))


def _attention(case: dict[str, Any]) -> str | None:
    """Forward and backward of the fused attention kernels against the op composition, on
    operands whose shapes may not fit each other (then NotImplemented is the only answer)."""
    seed, dtype, special = case["seed"], case["dtype"], case["special"]
    q, k, v, g = (make_array(case[f"{name}_shape"], dtype, case[f"{name}_layout"], seed + i,
                             special and name != "g")
                  for i, name in enumerate("qkvg"))
    scale, causal = case["scale"], case["causal"]
    forward = attention._sdpa_kernel(np).__wrapped__
    backward = attention._sdpa_backward_kernel(np).__wrapped__
    n = _outcome(lambda: _native_attention.attention(q, k, v, scale=scale, causal=causal))
    if n[0] != "value":
        return f"native forward raised {_describe(*n)}"
    if n[1] is not NotImplemented:
        f = _outcome(lambda: forward(q, k, v, None, None, scale=scale, causal=causal))
        if f[0] != "value":
            return f"native forward took operands the composition refuses ({_describe(*f)})"
        for ours, theirs, what, slack in (
                (n[1][0], f[1][0], "output", _weights_slack(f[1][1][0], v)),
                (n[1][1][0], f[1][1][0], "weights", None)):
            wrong = _compare(("value", ours), ("value", theirs), valid=True, exact=False,
                             finite_only=special, slack=slack, **_ATTENTION_TOL)
            if wrong:
                return f"forward {what}: {wrong}"
    weights = make_array(case["w_shape"], dtype, "contiguous", seed + 4, False)
    if causal and weights.ndim >= 2:  # the saved softmax is 0 where a query does not look
        weights = np.tril(weights)
    n = _outcome(lambda: _native_attention.attention_backward(g, q, k, v, weights, scale=scale,
                                                              causal=causal))
    if n[0] != "value":
        return f"native backward raised {_describe(*n)}"
    if n[1] is NotImplemented:
        return None
    f = _outcome(lambda: backward(g, q, k, v, weights, scale=scale, causal=causal))
    if f[0] != "value":
        return f"native backward took operands the composition refuses ({_describe(*f)})"
    if abs(scale) > 1e3:
        # saturated weights: dS is rounding noise, which the scale then blows up (in both);
        # the run above checked that the kernel takes these without crashing
        return None
    for ours, theirs, what in zip(n[1], f[1], ("gq", "gk", "gv")):
        wrong = _compare(("value", ours), ("value", theirs), valid=True, exact=False,
                         finite_only=special, **_ATTENTION_TOL)
        if wrong:
            return f"backward {what}: {wrong}"
    return None


KERNELS = {"im2col": _im2col, "col2im": _col2im, "softmax": _softmax,
           "softmax_backward": _softmax_backward, "layer_norm": _layer_norm,
           "layer_norm_backward": _layer_norm_backward, "log_softmax": _log_softmax,
           "cross_entropy": _cross_entropy, "lstm": _lstm, "attention": _attention}


def run_case(case: dict[str, Any]) -> str | None:
    """Run one case (see the module's docstring)."""
    with np.errstate(all="ignore"):
        return KERNELS[case["entry"]](case)
