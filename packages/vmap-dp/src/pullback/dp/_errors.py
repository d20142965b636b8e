"""Errors of pullback.dp: each message names the parameter or layer at fault and what to do."""

from __future__ import annotations

from dataclasses import dataclass

from pullback.errors import PullbackError


class PrivacyParameterError(PullbackError, ValueError):
    """An invalid privacy parameter: a negative noise multiplier, a clipping norm that is not
    positive, a sample rate outside (0, 1], a delta outside (0, 1)..."""


class BudgetError(PrivacyParameterError):
    """A target epsilon that no noise multiplier reaches for the given sample rate and steps."""


class PrivacyUsageError(PullbackError, RuntimeError):
    """A training loop that would void the privacy guarantee or its accounting: per-sample
    gradients missing or used twice, gradients accumulated under Poisson sampling, a model whose
    per-sample replay does not reproduce its forward pass."""


@dataclass(frozen=True)
class ModuleIssue:
    """One reason a layer cannot be trained privately.

    Attributes:
        path: the layer's dotted name in the model (``"features.3"``; ``""`` for the model).
        layer: the layer's class name.
        problem: what is wrong.
        fix: what to do about it.
    """

    path: str
    layer: str
    problem: str
    fix: str

    def __str__(self) -> str:
        where = f"'{self.path}' ({self.layer})" if self.path else f"the model ({self.layer})"
        return f"{where}: {self.problem} Fix: {self.fix}"


class UnsupportedModuleError(PullbackError, ValueError):
    """A model with layers that DP-SGD cannot train; ``issues`` lists every one."""

    def __init__(self, issues: list[ModuleIssue]) -> None:
        self.issues = list(issues)
        lines = "\n".join(f"  - {issue}" for issue in self.issues)
        super().__init__(f"the model cannot be trained with differential privacy "
                         f"({len(self.issues)} problem{'s' if len(self.issues) > 1 else ''}):\n"
                         f"{lines}")
