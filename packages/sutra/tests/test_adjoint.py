"""odeint_adjoint: its gradients against torchdiffeq's odeint_adjoint (every solver), against
direct backpropagation with the tolerances of torchdiffeq's own gradient tests, against closed
forms, and gradcheck; tuple states, time running backwards, the seminorm, explicit
adjoint_params, a vector field that differentiates inside (FFJORD's trace), and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import nn
from pullback.sutra import odeint, odeint_adjoint
from pullback.testing import gradcheck
from sutra_cases import (METHODS, OWN_DENSE_OUTPUT, accurate, allowed_error,
                         install_torch_tsit5, parity_kwargs, tensor)

# At the steps used here the Adams corrector does not always converge within its four
# iterations, backwards too: both libraries then warn and drop the oldest rate.
pytestmark = pytest.mark.filterwarnings("ignore:.*did not converge")

A = [[-0.1, 2.0], [-2.0, -0.1]]


class Cubic(nn.Module):
    """torchdiffeq's gradient-test problem: dy/dt = y^3 A, with an unused submodule."""

    def __init__(self) -> None:
        super().__init__()
        self.A = nn.Parameter(tensor(A))
        self.unused = nn.Linear(2, 5)

    def forward(self, t, y):
        return (y ** 3) @ self.A


def cubic_gradients(solve, method: str, weights: np.ndarray) -> list[np.ndarray]:
    func = Cubic()
    y0, t = tensor([[2.0, 0.0]], True), tensor(np.linspace(0.0, 25.0, 10), True)
    solve(func, y0, t, method=method).backward(tensor(weights))
    if solve is odeint_adjoint:  # every adjoint parameter gets a gradient, zero when unused
        assert float(func.unused.weight.grad.abs().max()) == 0.0
    return [y0.grad.numpy(), t.grad.numpy(), func.A.grad.numpy()]


@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_against_direct_backprop_with_torchdiffeqs_tolerances(method: str) -> None:
    # torchdiffeq's TestCompareAdjointGradient: y0 within 3e-4, t within 1e-4, A within 2e-3.
    weights = np.random.default_rng(0).random((10, 1, 2)) * 0.1
    adjoint = cubic_gradients(odeint_adjoint, method, weights)
    direct = cubic_gradients(odeint, method, weights)
    for a, d, tol in zip(adjoint, direct, (3e-4, 1e-4, 2e-3)):
        assert np.abs(a - d).max() < tol


@pytest.mark.parametrize("method", METHODS)
def test_against_torchdiffeqs_adjoint(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    torchdiffeq = pytest.importorskip("torchdiffeq")
    install_torch_tsit5(torch, monkeypatch)
    kwargs = {"method": method, **parity_kwargs(method)}
    if method == "adaptive_heun":  # an Euler error estimate: thousands of steps at 1e-5
        kwargs.update(rtol=1e-4, atol=1e-6)
    y0_np, t_np = np.array([[1.0, 0.5]]), np.array([0.0, 0.4, 0.8])
    weights = np.array([[[0.3, -1.0]], [[0.5, 0.25]], [[-0.7, 1.2]]])

    class TorchCubic(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.A = torch.nn.Parameter(torch.tensor(A, dtype=torch.float64))

        def forward(self, t, y):
            return (y ** 3) @ self.A * (1 + 0.3 * torch.sin(t))

    class Ours(Cubic):
        def forward(self, t, y):
            return (y ** 3) @ self.A * (1 + 0.3 * t.sin())

    ours_f, theirs_f = Ours(), TorchCubic()
    y0, t = tensor(y0_np, True), tensor(t_np, True)
    ty0 = torch.tensor(y0_np, requires_grad=True)
    tt = torch.tensor(t_np, requires_grad=True)
    ours = odeint_adjoint(ours_f, y0, t, **kwargs)
    theirs = torchdiffeq.odeint_adjoint(theirs_f, ty0, tt, **kwargs)
    ours.backward(tensor(weights))
    theirs.backward(torch.tensor(weights))
    # The same algorithm backwards too: rounding apart (see the parity tests for dopri8 and for
    # the two with their own interpolation, which the backward solve uses between steps too).
    tol = 1e-9 if method not in OWN_DENSE_OUTPUT + ("dopri8",) else 1e-4
    for name, mine, ref in (("y", ours.detach().numpy(), theirs.detach().numpy()),
                            ("y0", y0.grad.numpy(), ty0.grad.numpy()),
                            ("t", t.grad.numpy(), tt.grad.numpy()),
                            ("A", ours_f.A.grad.numpy(), theirs_f.A.grad.numpy())):
        np.testing.assert_allclose(mine, ref, rtol=tol, atol=tol, err_msg=name)


@pytest.mark.parametrize("method", METHODS)
def test_against_the_matrix_exponential(method: str) -> None:
    # y' = y @ (a M): dL/dy0 = sum_i expm(a M (t_i - t0)) w_i, and dL/dt_i = w_i . f(y_i).
    torch = pytest.importorskip("torch")
    m = np.array([[-0.3, 1.0], [-1.0, -0.2]])
    y0_np, t_np, a_np = np.array([1.0, 0.5]), np.array([0.0, 0.7, 1.5]), 0.8
    weights = np.array([[0.3, -1.0], [0.5, 0.25], [-0.7, 1.2]])
    y0, t, a, matrix = tensor(y0_np, True), tensor(t_np, True), tensor(a_np, True), tensor(m)
    odeint_adjoint(lambda s, y: a * (y @ matrix), y0, t, adjoint_params=(a,),
                   **accurate(method)).backward(tensor(weights))

    def expm(s: float) -> np.ndarray:
        return torch.linalg.matrix_exp(torch.tensor(a_np * m * s)).numpy()

    ys = [y0_np @ expm(s) for s in t_np]
    grad_y0 = sum(expm(s) @ w for s, w in zip(t_np, weights))
    grad_a = sum(float(y0_np @ (s * m) @ expm(s) @ w) for s, w in zip(t_np, weights))
    grad_t = np.array([float(a_np * yi @ m @ w) for yi, w in zip(ys, weights)])
    grad_t[0] = -float(a_np * y0_np @ m @ (grad_y0 - weights[0]))
    tol = 20 * allowed_error(method)
    np.testing.assert_allclose(y0.grad.numpy(), grad_y0, atol=tol)
    np.testing.assert_allclose(float(a.grad), grad_a, atol=tol)
    np.testing.assert_allclose(t.grad.numpy(), grad_t, atol=tol)  # exact f: no interpolation


GRADCHECK = {"dopri5": {"rtol": 1e-11, "atol": 1e-12}, "tsit5": {"rtol": 1e-11, "atol": 1e-12},
             # dopri8's step sizes move with rounding (see the parity tests), which the finite
             # differences would see: it runs at a fixed step.
             "dopri8": {"options": {"first_step": 0.1, "min_step": 0.1, "max_step": 0.1}},
             "rk4": {"options": {"step_size": 0.01}}}


@pytest.mark.parametrize("method", sorted(GRADCHECK))
def test_gradcheck(method: str) -> None:
    # The adjoint's gradient is the continuous one: with tight tolerances (or small steps) it is
    # also the discrete solution's to far below gradcheck's bounds.
    matrix = tensor([[-0.3, 1.0], [-1.0, -0.2]])
    kwargs = GRADCHECK[method]

    def solve(y0, t, a):
        return odeint_adjoint(lambda s, y: a * (y @ matrix) + 0.2 * s.sin() * y * y, y0, t,
                              method=method, adjoint_params=(a,), **kwargs)

    assert gradcheck(solve, (tensor([1.0, 0.5], True), tensor([0.0, 0.4, 1.0], True),
                             tensor(0.7, True)), atol=1e-5, rtol=1e-4)


def test_tuple_state_and_backward_time_match_direct_backprop() -> None:
    k = tensor(1.7, True)

    def spring(t, state):
        x, v = state
        return v, -k * x - 0.1 * v * t

    grads = []
    for solve in (odeint_adjoint, odeint):
        k.grad = None
        x0, v0 = tensor([[1.0], [0.3]], True), tensor([[0.0], [1.0]], True)
        t = tensor([2.0, 1.0, -0.5], True)
        x, v = solve(spring, (x0, v0), t, rtol=1e-10, atol=1e-12,
                     **({"adjoint_params": (k,)} if solve is odeint_adjoint else {}))
        (x.sum() * 0.5 + (v * v).sum()).backward()
        grads.append([x0.grad.numpy(), v0.grad.numpy(), t.grad.numpy(), k.grad.numpy()])
    for a, d in zip(*grads):
        np.testing.assert_allclose(a, d, rtol=1e-6, atol=1e-8)


def test_seminorm_takes_fewer_steps_for_the_same_gradients() -> None:
    pullback.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 2)).to(pullback.float64)
    counted = {"calls": 0}

    def field(t, y):
        counted["calls"] += 1
        return net(y)

    x = pullback.randn(16, 2, dtype=pullback.float64)
    results = []
    for options in (None, {"norm": "seminorm"}):
        net.zero_grad()
        y = odeint_adjoint(field, x, tensor([0.0, 1.0]), rtol=1e-6, atol=1e-8,
                           adjoint_params=tuple(net.parameters()), adjoint_options=options)
        counted["calls"] = 0
        (y[-1] ** 2).sum().backward()
        results.append((counted["calls"], [p.grad.numpy() for p in net.parameters()]))
    (full, grads_full), (semi, grads_semi) = results
    assert semi < full, (semi, full)
    for a, b in zip(grads_full, grads_semi):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-6)


def test_a_field_that_differentiates_inside() -> None:
    # FFJORD's exact trace for 2-D: d(log p)/dt = -tr(df/dz), computed with autograd inside
    # func; the adjoint then differentiates a vector-Jacobian product (a second derivative).
    pullback.manual_seed(1)
    net = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 2)).to(pullback.float64)

    def cnf(t, state):
        z, _ = state
        with pullback.enable_grad():
            if not z.requires_grad:
                z = z.detach()
                z.requires_grad = True
            dz = net(z)
            trace = 0
            for i in range(2):
                e = pullback.zeros_like(z)
                e[:, i] = 1.0
                (row,) = pullback.autograd.grad(dz, [z], grad_outputs=e, create_graph=True)
                trace = trace + row[:, i]
        return dz, -trace

    z0 = pullback.randn(4, 2, dtype=pullback.float64)
    grads = []
    for solve in (odeint_adjoint, odeint):
        net.zero_grad()
        z, logp = solve(cnf, (z0, pullback.zeros(4, dtype=pullback.float64)),
                        tensor([0.0, 1.0]), rtol=1e-9, atol=1e-10,
                        **({"adjoint_params": tuple(net.parameters())}
                           if solve is odeint_adjoint else {}))
        ((z[-1] ** 2).sum() + logp[-1].sum()).backward()
        grads.append([p.grad.numpy() for p in net.parameters()])
    for a, d in zip(*grads):
        np.testing.assert_allclose(a, d, rtol=1e-5, atol=1e-7)


def test_errors() -> None:
    y0, t = tensor([1.0]), tensor([0.0, 1.0])
    with pytest.raises(ValueError, match="func is not a pullback.nn.Module.*adjoint_params"):
        odeint_adjoint(lambda t, y: -y, y0, t)
    with pytest.raises(ValueError, match="adjoint_method 'rk4' differs from method 'dopri5'"):
        odeint_adjoint(Cubic(), tensor([[1.0, 0.0]]), t, options={"first_step": 0.1},
                       adjoint_method="rk4")
    with pytest.raises(ValueError, match="adjoint_method 'rk4' takes no option 'first_step'"):
        odeint_adjoint(Cubic(), tensor([[1.0, 0.0]]), t, adjoint_method="rk4",
                       adjoint_options={"first_step": 0.1})
    with pytest.raises(ValueError, match="unknown adjoint_method 'rk45'"):
        odeint_adjoint(Cubic(), tensor([[1.0, 0.0]]), t, adjoint_method="rk45")
