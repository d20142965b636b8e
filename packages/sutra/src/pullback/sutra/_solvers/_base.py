"""What every solver shares: its constructor's contract, the options it takes, and the search
for an event inside a step."""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, NoReturn, Sequence

from .._dynamics import CheckedDynamics, Dynamics, as_array
from .._errors import NonFiniteError

# An event function in internal form: (internal time, internal state array) -> float whose sign
# change marks the event (several event functions are combined into one; see _events.py).
EventFn = Callable[[float, Any], float]


def sign(value: float) -> int:
    return (value > 0) - (value < 0)


class Solver:
    """Base of the solvers. A solver integrates one problem once.

    Subclasses set ``order`` (the global order of accuracy) and implement :meth:`integrate` and
    :meth:`integrate_until_event`. Their options are the keyword-only arguments of
    ``__init__`` after ``rtol`` and ``atol``; odeint refuses any other.

    Args:
        fn: the dynamics in internal form.
        y0: the initial internal state (an array, or a Tensor in graph mode).
        rtol: relative tolerance (a float, or an array of the state's shape).
        atol: absolute tolerance (likewise).
    """

    order: int
    name: str = ""

    def __init__(self, fn: Dynamics, y0: Any, *, rtol: Any, atol: Any) -> None:
        self.fn, self.y0, self.rtol, self.atol = fn, y0, rtol, atol
        self.xp = fn.xp

    @classmethod
    def option_names(cls) -> list[str]:
        """The options this solver takes (odeint's ``options`` keys)."""
        params = inspect.signature(cls.__init__).parameters.values()
        return [p.name for p in params
                if p.kind is p.KEYWORD_ONLY and p.name not in ("rtol", "atol")]

    def integrate(self, times: Sequence[Any], times_f: Sequence[float], f0: Any = None) -> list[Any]:
        """The states at ``times`` (internal, increasing; ``times_f`` are their float values),
        starting from ``y0`` at ``times[0]``. ``f0``, when given, is ``fn(times[0], y0)``."""
        raise NotImplementedError

    def integrate_until_event(self, t0: Any, t0f: float, event_fn: EventFn) -> tuple[float, Any]:
        """Integrate from ``t0`` (a float, or a 0-d Tensor when it needs a gradient; ``t0f``
        is its float value) until ``event_fn`` changes sign: (event time, state there)."""
        raise NotImplementedError

    def raise_non_finite(self, step: int, t: Any, replay: Callable[[], Any]) -> NoReturn:
        """A step's result is not finite: replay it with every evaluation checked, to name the
        one that returned NaN or Inf; if none did, the arithmetic itself overflowed."""
        fn = self.fn
        self.fn = CheckedDynamics(fn, self.name, step)  # type: ignore[assignment]
        try:
            replay()
        finally:
            self.fn = fn
        raise NonFiniteError(
            f"{fn.name}: the state became non-finite in step {step} of {self.name} from "
            f"t={fn.user_time_of(t):.6g}, though func returned finite values: the solution "
            "overflows (an unstable problem, or too large a step?)")

    def find_event(self, interpolate: Callable[[float], Any], sign0: int, t0: float, t1: float,
                   event_fn: EventFn) -> tuple[float, Any]:
        """Bisect ``[t0, t1]`` (where the event's sign changes) down to ``atol`` in time."""
        tol = max(float(self.xp.max(self.xp.asarray(self.atol))), 4 * math.ulp(max(abs(t0), abs(t1), 1.0)))
        for _ in range(max(0, math.ceil(math.log2((t1 - t0) / tol)))):
            mid = (t0 + t1) / 2
            if sign(event_fn(mid, as_array(interpolate(mid)))) == sign0:
                t0 = mid
            else:
                t1 = mid
        event_t = (t0 + t1) / 2
        return event_t, interpolate(event_t)
