"""The layer-parity harness shared by pullback.nn's tests: a table of cases, each building a
layer from ``torch.nn`` and from ``pullback.nn`` with the same call (the APIs match), copying
PyTorch's weights in through ``load_state_dict`` and comparing forward values, gradients of
inputs and parameters, and buffers, in float64 (to 1e-10) and float32, train and eval modes.

(A uniquely named module rather than conftest.py, which every package's tests have.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import pullback

from nn_helpers import assert_close, assert_parameter_grads_and_buffers_close, copy_torch_weights


@dataclass
class Case:
    """One layer configuration: ``make(nn)`` builds it (or returns a function of
    ``nn.functional``), ``inputs(rng)`` makes NumPy inputs (floating ones get gradients,
    integer ones are passed as int64: targets, indices)."""

    id: str
    make: Callable[[Any], Any]
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    modes: tuple[str, ...] = ("train",)
    output: Callable[[Any], Any] = field(default=lambda out: out)
    kwargs: dict[str, Any] = field(default_factory=dict)  # keyword arguments of the call


def normal(*shape: int, scale: float = 1.0) -> Callable[[np.random.Generator], list[np.ndarray]]:
    return lambda rng: [rng.standard_normal(shape) * scale]


def ints(high: int, *shape: int) -> Callable[[np.random.Generator], list[np.ndarray]]:
    return lambda rng: [rng.integers(0, high, shape)]


class _Function:
    """A function in place of a layer: no parameters, buffers or modes."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def eval(self) -> None:
        pass

    def named_parameters(self) -> list:
        return []

    named_buffers = named_parameters


def _run(module: Any, arrays: list[np.ndarray], framework: Any, dtype: str,
         kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """Forward with fresh inputs (floating ones require grad); returns (output, inputs)."""
    inputs = []
    for a in arrays:
        floating = a.dtype.kind == "f"
        if framework is not pullback:
            t = framework.tensor(a, dtype=getattr(framework, dtype) if floating else
                                 framework.int64)
            t.requires_grad_(floating)
        else:
            t = pullback.tensor(a, dtype=dtype if floating else "int64", requires_grad=floating)
        inputs.append(t)
    if len(arrays) == 3 and arrays[0] is arrays[1] is arrays[2]:
        inputs = [inputs[0]] * 3  # self-attention: one tensor passed three times
    return module(*inputs, **kwargs), inputs


def check_layer(case: Case, dtype: str, torch: Any) -> None:
    """Compare ``case``'s layer in pullback.nn with torch.nn's, in each of its modes."""
    from pullback import nn

    for mode in case.modes:
        rng = np.random.default_rng(0)
        ours, theirs = case.make(nn), case.make(torch.nn)
        if isinstance(theirs, torch.nn.Module):
            theirs = theirs.to(getattr(torch, dtype))
            ours.to(dtype)
            assert list(ours.state_dict()) == list(theirs.state_dict()), \
                f"{case.id}: state_dict keys differ"
            copy_torch_weights(ours, theirs)
        else:  # a function of nn.functional (``make(nn)`` returns it)
            ours, theirs = _Function(ours), _Function(theirs)
        arrays = case.inputs(rng)
        if mode == "eval":
            # Give batch norm non-trivial running statistics first.
            for _ in range(2):
                _run(ours, arrays, pullback, dtype, case.kwargs)
                _run(theirs, arrays, torch, dtype, case.kwargs)
            ours.eval()
            theirs.eval()
        out, ins = _run(ours, arrays, pullback, dtype, case.kwargs)
        t_out, t_ins = _run(theirs, arrays, torch, dtype, case.kwargs)
        out, t_out = case.output(out), case.output(t_out)
        if isinstance(t_out, tuple):
            # (output, attention weights) or (values, indices): compare all, differentiate
            # through the first.
            for i, (a, b) in enumerate(zip(out[1:], t_out[1:]), 1):
                if b.dtype.is_floating_point:
                    assert_close(a, b, dtype, f"{case.id} output {i} ({mode})")
                else:
                    np.testing.assert_array_equal(np.asarray(a), b.numpy(),
                                                  err_msg=f"{case.id} output {i} ({mode})")
            out, t_out = out[0], t_out[0]
        assert tuple(out.shape) == tuple(t_out.shape), f"{case.id}: shapes differ"
        assert_close(out, t_out, dtype, f"{case.id} forward ({mode})")
        if not t_out.requires_grad:
            continue
        weights = rng.standard_normal(tuple(t_out.shape))
        (out * pullback.tensor(weights, dtype=dtype)).sum().backward()
        (t_out * torch.tensor(weights, dtype=getattr(torch, dtype))).sum().backward()
        seen = set()
        for x, tx in zip(ins, t_ins):
            if id(x) in seen or not tx.requires_grad:
                continue
            seen.add(id(x))
            if x.grad is None and not tx.grad.any():  # a piecewise-constant input: no graph
                continue
            assert_close(x.grad, tx.grad, dtype, f"{case.id} input gradient ({mode})")
        assert_parameter_grads_and_buffers_close(ours, theirs, dtype, f"{case.id}", mode)


@dataclass
class LossCase:
    """One loss configuration: ``make(nn, T)`` builds it (``T`` makes a tensor of the framework
    from a NumPy array, for weights), ``inputs(rng)`` makes the NumPy inputs and
    ``grad_inputs`` says whose gradients are compared."""

    id: str
    make: Callable[[Any, Callable[[np.ndarray], Any]], Any]
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    grad_inputs: tuple[int, ...] = (0,)


def check_loss(case: LossCase, dtype: str, torch: Any) -> None:
    """Compare ``case``'s loss in pullback.nn with torch.nn's: value and input gradients."""
    from pullback import nn

    rng = np.random.default_rng(0)
    arrays = case.inputs(rng)
    tdt = getattr(torch, dtype)
    ours = case.make(nn, lambda a: pullback.tensor(a, dtype=dtype))
    theirs = case.make(torch.nn, lambda a: torch.tensor(a, dtype=tdt))

    def make_inputs(framework: str) -> list[Any]:
        out = []
        for i, a in enumerate(arrays):
            floating = a.dtype.kind == "f"
            wants = floating and i in case.grad_inputs
            if framework == "torch":
                t = torch.tensor(a, dtype=tdt if floating else torch.int64, requires_grad=wants)
            else:
                t = pullback.tensor(a, dtype=dtype if floating else "int64", requires_grad=wants)
            out.append(t)
        return out

    ins, t_ins = make_inputs("pullback"), make_inputs("torch")
    loss, t_loss = ours(*ins), theirs(*t_ins)
    assert tuple(loss.shape) == tuple(t_loss.shape)
    assert_close(loss, t_loss, dtype, f"{case.id} value")
    weights = rng.standard_normal(tuple(t_loss.shape))
    (loss * pullback.tensor(weights, dtype=dtype)).sum().backward()
    (t_loss * torch.tensor(weights, dtype=tdt)).sum().backward()
    for i in case.grad_inputs:
        assert_close(ins[i].grad, t_ins[i].grad, dtype, f"{case.id} gradient of input {i}")
