"""Anomaly mode: stop at the first op that makes a NaN or an Inf, in forward or in backward.

While the mode is on, every op output is tested for finiteness as it is made, and every
gradient as a grad rule returns it; each recorded node keeps its creation stack in
``node.meta["creation_stack"]``, so that a NaN found in backward still names the line of user
code that created the op. The first anomaly raises :class:`~pullback.errors.AnomalyError`.

What counts as an anomaly:

* a NaN anywhere (forward output or gradient);
* an Inf that an op makes from finite inputs (overflow in ``exp``, ``log(0)``, ``x / 0``). An op
  that carries forward an infinity it was given is not blamed: ``masked_fill(mask, -inf)`` and
  the ops after it are how attention masks are written;
* any non-finite gradient.

When an input already held the NaN (a leaf, data, or a tensor computed before the mode was on),
the error is raised at the first op that reads it and says so.

With the mode off nothing of this runs: it is a :class:`~pullback.dispatch.DispatchMode`.
"""

from __future__ import annotations

import inspect
import sys
from types import FrameType
from typing import Any

from ..dispatch import DispatchMode, apply, state
from ..errors import AnomalyError
from ..registry import Op
from ..tensor import Tensor
from ._arrays import (
    all_finite, array_stats, describe_value, scalar_is_infinite, xp_of,
)
from ._source import Frames, capture_stack, describe_origin

META_KEY = "creation_stack"


class AnomalyMode(DispatchMode):
    """The dispatch mode behind :func:`detect_anomaly` and :func:`set_detect_anomaly`.

    Args:
        forward: check op outputs too (``False``: gradients only, as PyTorch's anomaly mode).
        infinities: a non-finite gradient is an anomaly (``False``: only NaN, as PyTorch's).
        check_nan: check anything at all (``False``: only record where ops were created).
    """

    def __init__(self, forward: bool = True, infinities: bool = True,
                 check_nan: bool = True) -> None:
        self._backward_node: Any = None  # the node whose grad rule is running, if any
        self.forward = forward and check_nan
        self.infinities = infinities
        self.check_nan = check_nan

    def dispatch(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any]) -> Any:
        out = apply(op, *args, **attrs)
        if out.__class__ is not Tensor:
            return out
        if self.forward and not all_finite(out.array):
            self._check_forward(op, args, attrs, out)
        if out._node is not None:
            _remember_creation(out._node)
        return out

    def on_function_node(self, node: Any) -> None:
        _remember_creation(node)

    def on_backward_start(self, node: Any, grad_in: Any) -> None:
        self._backward_node = node

    def on_backward(self, node: Any, grad_in: Any, grads_out: tuple[Any, ...]) -> None:
        for index, g in enumerate(grads_out):
            if g is None or not self.check_nan:
                continue
            array = g.array if isinstance(g, Tensor) else g
            if not all_finite(array) and (self.infinities or _has_nan(array)):
                raise _backward_error(node, grad_in, index, array)
        self._backward_node = None

    # -- forward -------------------------------------------------------------------------------
    def _check_forward(self, op: Op, args: tuple[Any, ...], attrs: dict[str, Any],
                       out: Tensor) -> None:
        if not _has_nan(out.array) and _given_inf(args, attrs):
            return  # an infinity carried forward (a -inf mask), not made here
        to_host = out.device.backend.to_host
        in_stats = [None if _array_of(a) is None else array_stats(_array_of(a), to_host)
                    for a in args]
        raise _forward_error(op, args, attrs, array_stats(out.array, to_host), in_stats, to_host,
                             self._running_backward())

    def _running_backward(self) -> Any:
        """The node whose grad rule (or Function backward) is running ops now, or None."""
        node = self._backward_node
        return node if node is not None and _inside_engine() else None


def _remember_creation(node: Any) -> None:
    """Keep the creation stack in ``node.meta`` (pullback's own frames are left out when it is
    shown, so skipping exactly to the user's frame is not needed)."""
    stack = capture_stack(skip=2)
    if node.meta is None:
        node.meta = {META_KEY: stack}
    else:
        node.meta[META_KEY] = stack


def _has_nan(array: Any) -> bool:
    return bool(xp_of(array).isnan(array).any())


def _array_of(value: Any) -> Any:
    """The array behind an op argument (a Tensor's data, or a raw array), else None."""
    if isinstance(value, Tensor):
        return value.array
    return value if hasattr(value, "dtype") and hasattr(value, "shape") else None


def _given_inf(args: tuple[Any, ...], attrs: dict[str, Any]) -> bool:
    """Whether an input (a tensor, an array or scalar operand, an attribute) already holds an
    infinity."""
    for value in (*args, *attrs.values()):
        array = _array_of(value)
        if (not all_finite(array)) if array is not None else scalar_is_infinite(value):
            return True
    return False


def _inside_engine() -> bool:
    """Whether the backward engine is on the current call stack (checked on failure only)."""
    from ..autograd.engine import run_backward

    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is run_backward.__code__:
            return True
        frame = frame.f_back
    return False


def _forward_error(op: Op, args: tuple[Any, ...], attrs: dict[str, Any], out_stats: Any,
                   in_stats: list[Any], to_host: Any, backward_of: Any) -> AnomalyError:
    what = "NaN" if out_stats.nan else "Inf"
    if backward_of is None:
        phase = "forward"
    elif backward_of.op is None:
        phase = f"backward, inside the backward of Function '{backward_of.name}'"
    else:
        phase = f"backward (create_graph=True), inside the grad rule of op '{backward_of.name}'"
    already = [i for i, s in enumerate(in_stats)
               if s is not None and (s.nan if what == "NaN" else s.inf)]
    if already:
        cause = f"from input {already[0]}, which already held {what}"
    elif what == "NaN" and any(s is not None and s.inf for s in in_stats):
        cause = "from inputs that held Inf but no NaN (inf - inf, 0 * inf, inf / inf)"
    else:
        cause = "from finite inputs"
    lines = [f"{phase}: op '{op.name}' produced {what} {cause}",
             f"  output: {out_stats}"]
    for i, a in enumerate(args):
        lines.append(f"  input {i}: {describe_value(a.array if isinstance(a, Tensor) else a, to_host)}")
    shown = {k: v for k, v in attrs.items() if k != "key"}
    if shown:
        lines.append(f"  attributes: {shown}")
    for i in already:
        source = args[i]
        if not isinstance(source, Tensor):
            kind = "an array operand"
        elif source._node is None:
            kind = "a leaf tensor"
        else:
            kind = f"made by op '{source._node.name}'"
        lines.append(
            f"  note: input {i} ({kind}) was already non-finite before this op; no op watched by "
            "anomaly mode produced it: it comes from data, a parameter, or a computation made "
            "before anomaly mode was turned on")
    lines.append(describe_origin(capture_stack()))
    return AnomalyError("\n".join(lines))


# -- backward --------------------------------------------------------------------------------
def _backward_error(node: Any, grad_in: Any, index: int, bad: Any) -> AnomalyError:
    to_host = node.device.backend.to_host
    bad_stats = array_stats(bad, to_host)
    what = "NaN" if bad_stats.nan else "Inf"
    incoming = list(grad_in) if isinstance(grad_in, list) else [grad_in]
    incoming_stats = [None if g is None else array_stats(g.array if isinstance(g, Tensor) else g,
                                                         to_host) for g in incoming]
    finite_in = all(s is None or s.finite for s in incoming_stats)
    if node.op is None:
        who = f"the backward of Function '{node.name}'{_defined_at(node.fn.backward)}"
    else:
        who = f"the grad rule of op '{node.name}'"
    source = "a finite incoming gradient" if finite_in else "an incoming gradient that was " \
        "already non-finite (a gradient= passed to backward, or a hook, put it there)"
    lines = [f"backward: {who} produced {what} in the gradient of input {index} from {source}",
             f"  gradient of input {index}: {bad_stats}"]
    for k, s in enumerate(incoming_stats):
        label = "incoming gradient" + (f" of output {k}" if len(incoming_stats) > 1 else "")
        lines.append(f"  {label}: {s if s is not None else 'None'}")
    inputs = node.arrays if node.op is not None else node.args
    for i, a in enumerate(inputs or ()):
        value = a.array if isinstance(a, Tensor) else a
        lines.append(f"  forward input {i}: {describe_value(value, to_host)}")
    stack: Frames | None = (node.meta or {}).get(META_KEY)
    if stack is not None:
        lines.append(describe_origin(stack).replace("created at", "the op was created at", 1))
    else:
        lines.append("  (no creation stack: the op was recorded while anomaly mode was off)")
    return AnomalyError("\n".join(lines))


def _defined_at(fn: Any) -> str:
    """" (defined at FILE:LINE)" for a Python function, or "" when unknown."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return ""
    return f" (defined at {code.co_filename}:{code.co_firstlineno})"


# -- switches ---------------------------------------------------------------------------------
def _active() -> AnomalyMode | None:
    for mode in state.modes:
        if isinstance(mode, AnomalyMode):
            return mode
    return None


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on in this thread."""
    return _active() is not None


def set_detect_anomaly(mode: bool) -> None:
    """Turn anomaly mode on or off for this thread, until turned off again.

    Like ``torch.autograd.set_detect_anomaly``; prefer :func:`detect_anomaly` around one
    region. Turning it on twice keeps one mode; turning it off removes it wherever it sits in
    the stack of dispatch modes.
    """
    active = _active()
    if mode and active is None:
        state.modes.append(AnomalyMode())
    elif not mode and active is not None:
        state.modes.remove(active)


class detect_anomaly:  # noqa: N801 - used like a function, as torch.autograd.detect_anomaly
    """Context manager: anomaly mode on inside the ``with`` block (this thread).

    Example::

        with pullback.debug.detect_anomaly():
            loss = model(x).log().mean()   # AnomalyError here if log meets a negative
            loss.backward()                # ... or here if a gradient turns NaN/Inf

    Entering while anomaly mode is already on adds nothing (each value is checked once).
    """

    def __init__(self) -> None:
        self._mode: AnomalyMode | None = None

    def __enter__(self) -> detect_anomaly:
        if _active() is None:
            self._mode = AnomalyMode()
            state.modes.append(self._mode)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._mode is not None and self._mode in state.modes:
            state.modes.remove(self._mode)
        self._mode = None

