"""Array updates (an optimizer's step) inside a traced function.

An optimizer updates its parameters with in-place ufuncs on backend arrays, written once
against an array namespace ``xp`` (:func:`pullback.dispatch.run_array_update`). While tracing,
:class:`RecordingNamespace` stands in for ``xp``: each ufunc runs for real and is recorded as
the matching pullback op, and a write through ``out=`` rebinds the array to the new value. The
Python numbers the update passes (learning rate, bias corrections from the step count) become
*scalar placeholders*, not constants.

At each call of the compiled function the update's Python runs again, alone, with
:class:`ScalarNamespace`: it computes nothing, checks that the update takes the path it took when
traced, and collects the numbers, which the graph then receives. So the optimizer's step count
advances and a learning-rate schedule is followed exactly as in eager mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Number
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .errors import CompileError, TraceError

if TYPE_CHECKING:
    from ._ir import Placeholder, Value
    from ._tracer import Tracer

# ufunc name -> pullback op (their kernels are these ufuncs)
UFUNC_OPS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
    "negative": "neg", "sqrt": "sqrt", "maximum": "maximum", "minimum": "minimum",
    "square": "square", "abs": "abs", "absolute": "abs", "exp": "exp", "log": "log",
    "sign": "sign", "reciprocal": "reciprocal",
}
# namespace functions that only allocate (scratch buffers): run as they are, not recorded
_ALLOCATORS = frozenset({"empty_like", "zeros_like", "ones_like", "empty", "zeros", "ones"})
_SUPPORTED = sorted(set(UFUNC_OPS) | {"copyto", "clip"} | _ALLOCATORS)


@dataclass(eq=False)
class Call:
    """One namespace call of a traced update: what a later run must repeat."""

    name: str
    pattern: tuple[str, ...]  # per operand: "a" array, "s" runtime number, "c" fixed number
    fixed: tuple[Any, ...]  # the "c" numbers
    persistent: tuple[Any, ...]  # per array operand (out last): the array object, or None


@dataclass(eq=False)
class Region:
    """One traced array update (one ``optimizer.step()``)."""

    update: Callable[[Callable[[Any], Any]], None]
    calls: list[Call] = field(default_factory=list)
    scalars: list[Placeholder] = field(default_factory=list)
    # the .grad of tracked tensors when the update ran: (tensor, Value or None)
    grad_state: list[tuple[Any, Value | None]] = field(default_factory=list)

    @property
    def owner(self) -> Any:
        return getattr(self.update, "__self__", None)

    def describe(self) -> str:
        owner = self.owner
        return f"{type(owner).__name__}.step" if owner is not None else repr(self.update)

    def collect_scalars(self) -> list[Any]:
        """Run the update's Python again (nothing is computed) and return its numbers."""
        namespace = ScalarNamespace(self)
        self.update(lambda device: namespace)
        if namespace.position != len(self.calls):
            raise CompileError(
                f"{self.describe()} made {namespace.position} array calls, but "
                f"{len(self.calls)} when it was traced; recompile (it took another path)")
        return namespace.scalars


# Python's own number types, checked before the (slower) abstract Number check
_PLAIN_NUMBERS = frozenset({float, int})


def _is_number(x: Any) -> bool:
    return isinstance(x, Number) and not isinstance(x, np.ndarray)


class _UpdateNamespace:
    """The calls an update may make, each routed to :meth:`_call`."""

    def __init__(self, xp: Any) -> None:
        self._xp = xp

    def _call(self, name: str, operands: tuple[Any, ...], fixed: tuple[Any, ...],
              out: Any) -> Any:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        attr = getattr(self._xp, name)
        if name in _ALLOCATORS or not callable(attr) or isinstance(attr, type):
            return attr  # dtypes, constants and allocations pass through
        if name not in UFUNC_OPS:
            raise TraceError(
                f"an array update called xp.{name}, which the compiler cannot record; "
                f"the supported calls are {', '.join(_SUPPORTED)}")

        def ufunc(*operands: Any, out: Any = None) -> Any:
            return self._call(name, operands, (), out)

        self.__dict__[name] = ufunc  # later look-ups skip __getattr__
        return ufunc

    def copyto(self, dst: Any, src: Any, casting: str = "same_kind") -> None:
        self._call("copyto", (src,), (), dst)

    def clip(self, a: Any, a_min: Any, a_max: Any, out: Any = None) -> Any:
        return self._call("clip", (a,), (a_min, a_max), out)


class RecordingNamespace(_UpdateNamespace):
    """``xp`` while tracing: computes, and records each call in the tracer's graph."""

    def __init__(self, tracer: Tracer, xp: Any, region: Region) -> None:
        super().__init__(xp)
        self._tracer = tracer
        self._region = region

    def _call(self, name: str, operands: tuple[Any, ...], fixed: tuple[Any, ...],
              out: Any) -> Any:
        xp, tracer = self._xp, self._tracer
        pattern = tuple("a" if isinstance(a, np.ndarray) or hasattr(a, "__array_namespace__")
                        else "s" for a in operands) + ("c",) * len(fixed)
        inputs = []
        for a, kind in zip(operands, pattern):
            if kind == "a":
                inputs.append(tracer.array_value(a, owner=self._region.owner))
            elif _is_number(a):
                inputs.append(self._scalar())
            else:
                raise TraceError(f"xp.{name} got {type(a).__name__}, not an array or a number")
        if name == "copyto":
            real, value = operands[0], inputs[0]
        elif name == "clip":
            real = xp.clip(operands[0], *fixed)
            value = tracer.record_raw("clamp", inputs, {"min": fixed[0], "max": fixed[1]}, real)
        else:
            real = getattr(xp, name)(*operands)
            value = tracer.record_raw(UFUNC_OPS[name], inputs, {}, real)
        arrays = [a for a, kind in zip(operands, pattern) if kind == "a"]
        if out is not None:
            arrays.append(out)
            value = tracer.fit_value(value, real, out)
            xp.copyto(out, real, casting="unsafe" if name == "copyto" else "same_kind")
            tracer.rebind_array(out, value)
            result = out
        else:
            tracer.bind_array(real, value)
            result = real
        persistent = tuple(a if tracer.is_persistent(a) else None for a in arrays)
        self._region.calls.append(Call(name, pattern, tuple(fixed), persistent))
        return result

    def _scalar(self) -> Value:
        ph = self._tracer.scalar_placeholder()
        self._region.scalars.append(ph)
        return ph.value


class _Pending:
    """What a call returns while only numbers are collected (nothing may read it)."""

    def __repr__(self) -> str:
        return "<array computed by the compiled graph>"


_PENDING = _Pending()


class ScalarNamespace(_UpdateNamespace):
    """``xp`` at each compiled call: checks the path, collects the numbers, computes nothing."""

    def __init__(self, region: Region) -> None:
        super().__init__(np)
        self._region = region
        self.position = 0
        self.scalars: list[Any] = []

    def _call(self, name: str, operands: tuple[Any, ...], fixed: tuple[Any, ...],
              out: Any) -> Any:
        calls = self._region.calls
        if self.position >= len(calls):
            raise CompileError(f"{self._region.describe()} made more array calls than when it "
                               f"was traced (xp.{name} is extra); recompile")
        expected = calls[self.position]
        # One pass over the operands: this runs for every call of every step (an AdamW step
        # of the benchmark GPT makes 378 of them).
        arrays = []
        kinds = []
        numbers = []
        for a in operands:
            # arrays first: the abstract Number check (an ABC's isinstance) cost 0.5 ms a step
            if a.__class__ is not np.ndarray and (a.__class__ in _PLAIN_NUMBERS
                                                  or _is_number(a)):
                kinds.append("s")
                numbers.append(a)
            else:
                kinds.append("a")
                arrays.append(a)
        if out is not None:
            arrays.append(out)
        pattern = (*kinds, *("c",) * len(fixed))
        replaced = False
        for a, p in zip(arrays, expected.persistent):
            if p is not None and a is not p:
                replaced = True
        if replaced:
            raise CompileError(
                f"{self._region.describe()} updates other arrays than when it was traced (call "
                f"{self.position}, xp.{name}): a parameter or optimizer state was replaced "
                "(load_state_dict, .data =); recompile")
        if expected.name != name or expected.pattern != pattern or expected.fixed != fixed:
            raise CompileError(
                f"{self._region.describe()} took another path than when it was traced: call "
                f"{self.position} is xp.{name}{pattern}, traced as "
                f"xp.{expected.name}{expected.pattern}; recompile")
        self.position += 1
        self.scalars.extend(numbers)
        return out if out is not None else _PENDING
