"""``NeuralODE``: an ODE solve as a layer (a continuous-depth block)."""

from __future__ import annotations

from typing import Any, Callable

import pullback
from pullback import Tensor
from pullback.nn import Module

from ._adjoint import odeint_adjoint
from ._odeint import odeint


class NeuralODE(Module):
    """``y(t1)`` for ``dy/dt = func(t, y)``, ``y(t0) = input``: a block of an ordinary model.

    Args:
        func: the vector field ``func(t, y)``, usually a :class:`pullback.nn.Module` (then its
            parameters are this module's).
        t0, t1: the interval (``t1 < t0`` integrates backwards).
        solver: a name in :data:`pullback.sutra.SOLVERS`.
        rtol, atol: the solver's tolerances (torchdyn's defaults; odeint's are tighter).
        adjoint: gradients by the adjoint method (memory independent of the number of steps)
            instead of backpropagation through the solver.
        options, adjoint_options: the solver's options, and those of the backward solve.

    Attributes:
        nfe: evaluations of ``func`` in the last forward pass.
        nfe_backward: evaluations of ``func`` since then (the adjoint's backward pass).

    Example::

        >>> import pullback as pb
        >>> from pullback import nn
        >>> from pullback.sutra import NeuralODE
        >>> class Field(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.net = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
        ...     def forward(self, t, y):
        ...         return self.net(y)
        >>> block = NeuralODE(Field(), solver="tsit5")
        >>> block(pb.randn(8, 2)).shape
        (8, 2)
    """

    def __init__(self, func: Callable[..., Any], t0: float = 0.0, t1: float = 1.0,
                 solver: str = "dopri5", rtol: float = 1e-3, atol: float = 1e-3,
                 adjoint: bool = True, options: dict[str, Any] | None = None,
                 adjoint_options: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.func = func
        self.t0, self.t1, self.solver = float(t0), float(t1), solver
        self.rtol, self.atol, self.adjoint = rtol, atol, bool(adjoint)
        self.options, self.adjoint_options = options, adjoint_options
        self.nfe, self._calls = 0, 0

    @property
    def nfe_backward(self) -> int:
        return self._calls - self.nfe

    def forward(self, y0: Any, t: Tensor | None = None) -> Any:
        """``y(t1)``; or, given times ``t``, the trajectory at them (time on axis 0)."""
        like = y0[0] if isinstance(y0, tuple) else y0
        times = t if t is not None else pullback.tensor([self.t0, self.t1], dtype=pullback.float64,
                                                        device=like.device)
        self._calls = 0
        kwargs: dict[str, Any] = {"rtol": self.rtol, "atol": self.atol, "method": self.solver,
                                  "options": self.options}
        if self.adjoint:
            params = tuple(self.func.parameters()) if isinstance(self.func, Module) else ()
            kwargs.update(adjoint_options=self.adjoint_options, adjoint_params=params)
            ys = odeint_adjoint(self._counted, y0, times, **kwargs)
        else:
            ys = odeint(self._counted, y0, times, **kwargs)
        self.nfe = self._calls
        if t is not None:
            return ys
        return tuple(y[-1] for y in ys) if isinstance(ys, tuple) else ys[-1]

    def _counted(self, t: Tensor, y: Any) -> Any:
        self._calls += 1
        return self.func(t, y)

    def extra_repr(self) -> str:
        return (f"t0={self.t0}, t1={self.t1}, solver={self.solver!r}, rtol={self.rtol}, "
                f"atol={self.atol}, adjoint={self.adjoint}")
