"""Backpropagation through the solvers (odeint): gradcheck in float64 for every method, the
gradients against closed forms (the matrix exponential) and against torchdiffeq's.

gradcheck compares with finite differences of the same computation, so it runs with steps that
do not depend on the inputs (fixed-grid solvers on the output times, adaptive ones at a fixed
step): a perturbed input then changes no accept/reject decision, which would make the finite
difference jump. Through step-size control, gradients are checked against the exact
sensitivities instead (they agree to the solver's tolerance, as torchdiffeq's do).
"""

from __future__ import annotations

import numpy as np
import pytest

from pullback.sutra import odeint
from pullback.testing import gradcheck
from sutra_cases import (ADAPTIVE, FIXED, METHODS, OWN_DENSE_OUTPUT, accurate, allowed_error,
                         install_torch_tsit5, parity_kwargs, tensor)

M = np.array([[-0.3, 1.0], [-1.0, -0.2]])


def steps_independent_of_the_inputs(method: str) -> dict:
    if method in FIXED:
        return {"max_order": 5} if method == "explicit_adams" else {}
    return {"first_step": 0.1, "min_step": 0.1, "max_step": 0.1}


@pytest.mark.parametrize("method", METHODS)
def test_gradcheck(method: str) -> None:
    matrix = tensor(M)
    options = steps_independent_of_the_inputs(method)

    def solve(y0, t, a, b):
        return odeint(lambda t, y: a * (y @ matrix) + b * t.sin() * y * y, y0, t, method=method,
                      options=options)

    inputs = (tensor([1.0, 0.5], True), tensor([0.0, 0.3, 0.7, 1.0], True), tensor(0.7, True),
              tensor(0.3, True))
    assert gradcheck(solve, inputs)


@pytest.mark.parametrize("method", METHODS)
def test_gradients_match_the_matrix_exponential(method: str) -> None:
    # y' = a * y @ M, so y(t) = y0 @ expm(a M (t - t0)): every sensitivity in closed form.
    torch = pytest.importorskip("torch")
    y0_np, t_np, a_np = np.array([1.0, 0.5]), np.array([0.2, 0.9, 1.6]), 0.8
    y0, t, a, matrix = tensor(y0_np, True), tensor(t_np, True), tensor(a_np, True), tensor(M)
    kwargs = accurate(method)
    if method in FIXED:
        # Between grid points the time gradient is the slope of the interpolation: O(step) for
        # linear interpolation (torchdiffeq's default), O(step^3) for cubic.
        kwargs["options"]["interp"] = "cubic"
    y = odeint(lambda t, y: a * (y @ matrix), y0, t, **kwargs)
    weights = np.array([[0.3, -1.0], [0.5, 0.25], [-0.7, 1.2]])
    (y * tensor(weights)).sum().backward()

    def expm(s: float) -> np.ndarray:
        return torch.linalg.matrix_exp(torch.tensor(a_np * M * s)).numpy()

    ys = [y0_np @ expm(s - t_np[0]) for s in t_np]
    grad_y0 = sum(expm(s - t_np[0]) @ w for s, w in zip(t_np, weights))
    grad_a = sum(float(y0_np @ ((s - t_np[0]) * M) @ expm(s - t_np[0]) @ w)
                 for s, w in zip(t_np, weights))
    grad_t = np.array([float(a_np * yi @ M @ w) for yi, w in zip(ys, weights)])
    # Moving the start shifts every later state (not y(t0) = y0 itself).
    grad_t[0] = -float(a_np * y0_np @ M @ (grad_y0 - weights[0]))
    tol = 20 * allowed_error(method)
    np.testing.assert_allclose(y0.grad.numpy(), grad_y0, atol=tol)
    np.testing.assert_allclose(float(a.grad), grad_a, atol=tol)
    # Time gradients differentiate the dense output, which is less accurate than the solution
    # for the low-order pairs; and an Adams step's derivative in its length is its mean slope
    # (the past rates do not move), O(step) from f. So in torchdiffeq; the adjoint's are exact.
    t_tol = 2e-2 if "adams" in method else max(tol, 1e-3)
    np.testing.assert_allclose(t.grad.numpy(), grad_t, atol=t_tol)


# bosh3 and adaptive_heun interpolate between steps otherwise than torchdiffeq (see
# test_torchdiffeq_parity.py): their gradients are checked against closed forms above.
@pytest.mark.parametrize("method", [m for m in METHODS if m not in OWN_DENSE_OUTPUT])
def test_gradients_match_torchdiffeq(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    torchdiffeq = pytest.importorskip("torchdiffeq")
    install_torch_tsit5(torch, monkeypatch)
    kwargs = {"method": method, **parity_kwargs(method)}
    y0_np, t_np = np.array([1.0, 0.5]), np.array([0.0, 0.5, 1.2])
    def gradients(solve, make, sin) -> list[np.ndarray]:
        y0, t, a, matrix = make(y0_np), make(t_np), make(0.8), make(M)
        y = solve(lambda s, y: a * (y @ matrix) * (1 + 0.2 * sin(s)), y0, t, **kwargs)
        (y * y).sum().backward()
        return [x.grad.numpy() for x in (y0, t, a, matrix)]

    ours = gradients(odeint, lambda v: tensor(v, True), lambda s: s.sin())
    theirs = gradients(torchdiffeq.odeint,
                       lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True), torch.sin)
    # Fixed grids: the same operations, so rounding apart. Adaptive: torchdiffeq also
    # differentiates its choice of the first step (a function of y0), which moves its
    # gradients by a few times the solver's tolerance (dopri8's steps also move with rounding,
    # see test_torchdiffeq_parity.py); 1e-4 is inside torchdiffeq's own gradient tests' bounds.
    tol = 1e-10 if method in FIXED else 1e-4
    for name, mine, reference in zip(("y0", "t", "a", "M"), ours, theirs):
        if name == "t" and method in FIXED:
            # An output time on a grid point: torchdiffeq returns the grid state as is, so its
            # derivative in that time is 0; pullback differentiates the interpolation there
            # (the slope of the step that ends on it), which is what moving the time does.
            continue
        np.testing.assert_allclose(mine, reference, rtol=tol, atol=tol, err_msg=name)


def test_no_graph_when_nothing_needs_a_gradient() -> None:
    # Without anything requiring grad the solver runs on raw arrays: the result is a leaf.
    y = odeint(lambda t, y: -y, tensor([1.0]), tensor([0.0, 1.0]))
    assert not y.requires_grad and y.grad_fn is None


def test_a_parameter_used_only_by_func_gets_its_gradient() -> None:
    # y0 and t need no gradient, but func's parameter does: odeint notices from f(t0, y0).
    k = tensor(1.3, True)
    y = odeint(lambda t, y: -k * y, tensor([2.0]), tensor([0.0, 1.0]), rtol=1e-10, atol=1e-12)
    y[1, 0].backward()
    np.testing.assert_allclose(float(k.grad), -2.0 * np.exp(-1.3), rtol=1e-7)


@pytest.mark.parametrize("method", ADAPTIVE)
def test_backward_time_gradients(method: str) -> None:
    # Time running backwards, y' = -y: y(t) = y0 exp(-(t - t0)).
    y0, t = tensor([1.5], True), tensor([1.0, 0.2], True)
    y = odeint(lambda t, y: -y, y0, t, **accurate(method))
    y[1, 0].backward()
    value = 1.5 * np.exp(0.8)
    np.testing.assert_allclose(float(y0.grad[0]), np.exp(0.8), rtol=1e-5)
    np.testing.assert_allclose(t.grad.numpy(), [value, -value], rtol=1e-3)
