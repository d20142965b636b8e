"""pullback.sutra: neural ODEs, adaptive solvers and adjoint backpropagation.

torchdiffeq's API on pullback: :func:`odeint` (backpropagation through the solver),
:func:`odeint_adjoint` (the continuous adjoint, memory independent of the number of steps),
:func:`odeint_event` (solve until an event, differentiable in the event time) and the
:class:`NeuralODE` module. :data:`SOLVERS` maps each method name to its solver.
"""

from ._errors import MaxStepsError, NonFiniteError, SolverError
from ._adjoint import odeint_adjoint
from ._events import odeint_event
from ._module import NeuralODE
from ._odeint import odeint
from ._solvers import SOLVERS

__all__ = ["SOLVERS", "MaxStepsError", "NeuralODE", "NonFiniteError", "SolverError", "odeint",
           "odeint_adjoint", "odeint_event"]
