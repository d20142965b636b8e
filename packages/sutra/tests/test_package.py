"""pullback-sutra is installed, discovered as a plugin, and registers nothing in the op table
(its solvers are compositions of core ops); its public surface is what the docs list."""

from __future__ import annotations

import pullback
import pullback.sutra as sutra
from pullback.sutra.__about__ import __version__
from pullback.testing.packaging import assert_empty_plugin


def test_installed_and_discovered() -> None:
    assert_empty_plugin("pullback-sutra", __version__, {"sutra": "pullback.sutra._plugin"})


def test_public_surface() -> None:
    assert sorted(sutra.__all__) == sorted(
        ["SOLVERS", "MaxStepsError", "NonFiniteError", "SolverError", "NeuralODE", "odeint",
         "odeint_adjoint", "odeint_event"])
    for name in set(sutra.__all__) - {"SOLVERS"}:  # (a mapping: documented in the module)
        assert getattr(sutra, name).__doc__, f"pullback.sutra.{name} has no docstring"
    assert issubclass(sutra.NonFiniteError, pullback.PullbackError)


def test_the_solvers_are_torchdiffeqs_plus_tsit5() -> None:
    assert sorted(sutra.SOLVERS) == sorted(
        ["euler", "midpoint", "heun2", "heun3", "rk4", "bosh3", "fehlberg2", "adaptive_heun",
         "dopri5", "dopri8", "tsit5", "explicit_adams", "implicit_adams", "fixed_adams"])
