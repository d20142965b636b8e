"""Shared fixtures: snnTorch's surrogates with spikes in the input's dtype."""

from __future__ import annotations

from typing import Any, Callable

import pytest


@pytest.fixture(scope="session")
def snn_spike_grad() -> dict[str, Callable[..., Any]]:
    """snnTorch's own surrogate classes (their backward untouched) returning spikes in the
    input's dtype instead of float32 (``(x > 0).float()``), which would round gradients to
    float32 on their way through the spikes and break float64 layers. Name -> ``spike_grad``
    factory taking the surrogate's parameter."""
    pytest.importorskip("torch")
    snn_surrogate = pytest.importorskip("snntorch.surrogate")

    def in_dtype(function: type, *params: float) -> Callable[..., Any]:
        class InDtype(function):  # type: ignore[misc, valid-type]
            @staticmethod
            def forward(ctx: Any, input_: Any, *args: Any) -> Any:
                return function.forward(ctx, input_, *args).to(input_.dtype)

        return lambda x: InDtype.apply(x, *params)

    return {
        "fast_sigmoid": lambda slope=25.0: in_dtype(snn_surrogate.FastSigmoid, slope),
        "arctan": lambda alpha=2.0: in_dtype(snn_surrogate.ATan, alpha),
        "sigmoid": lambda slope=25.0: in_dtype(snn_surrogate.Sigmoid, slope),
        "straight_through": lambda: in_dtype(snn_surrogate.StraightThroughEstimator),
    }
