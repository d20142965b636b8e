"""What the generated parity table does not see of the optimizers added for ported scripts:
ASGD's averaged iterate, SparseAdam on an embedding table (rows not looked up stay put, with
their moments), LBFGS's full iterations on a convex problem, its state and its refusals, against
PyTorch in float64 to 1e-10."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback.optim import ASGD, LBFGS, SparseAdam
from pullback.optim.errors import ParamGroupError

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these tests")


pytestmark = pytest.mark.usefixtures("torch_float64")


def test_asgd_averages_the_iterates_as_torch() -> None:
    rng = np.random.default_rng(0)
    start = rng.standard_normal((4, 3))
    ours = pullback.tensor(start, requires_grad=True)
    theirs = torch.tensor(start, requires_grad=True)
    opt_ours = ASGD([ours], lr=0.05, lambd=0.01, t0=4.0, weight_decay=0.1)
    opt_theirs = torch.optim.ASGD([theirs], lr=0.05, lambd=0.01, t0=4.0, weight_decay=0.1)
    for _ in range(15):
        target = rng.standard_normal((4, 3))
        for p, lib in ((ours, pullback), (theirs, torch)):
            p.grad = None
            ((p - lib.tensor(target)) ** 4).sum().backward()
        opt_ours.step()
        opt_theirs.step()
        state_ours, state_theirs = opt_ours.state[ours], opt_theirs.state[theirs]
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=1e-10)
        np.testing.assert_allclose(state_ours["ax"].numpy(), state_theirs["ax"].numpy(),
                                   atol=1e-10)
        assert state_ours["eta"] == pytest.approx(float(state_theirs["eta"]), rel=1e-14)
        assert state_ours["mu"] == pytest.approx(float(state_theirs["mu"]), rel=1e-14)
    assert state_ours["mu"] < 1  # averaging started after t0 steps


def test_sparse_adam_on_an_embedding_table_matches_torch() -> None:
    nn = pytest.importorskip("pullback.nn")
    rng = np.random.default_rng(1)
    table = rng.standard_normal((10, 4))
    ours = nn.Embedding(10, 4).to(dtype=pullback.float64)
    with pullback.no_grad():
        ours.weight.copy_(pullback.tensor(table))
    theirs = torch.nn.Embedding(10, 4, sparse=True).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(table))
    opt_ours = SparseAdam(ours.parameters(), lr=0.05)
    opt_theirs = torch.optim.SparseAdam(theirs.parameters(), lr=0.05)
    never_used = [7, 8, 9]
    for _ in range(12):
        ids = rng.integers(0, 7, size=(3, 2))
        for model, lib, opt in ((ours, pullback, opt_ours), (theirs, torch, opt_theirs)):
            opt.zero_grad()
            (model(lib.tensor(ids)) ** 2).sum().backward()
            opt.step()
        np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                                   atol=1e-10)
    np.testing.assert_array_equal(ours.weight.detach().numpy()[never_used], table[never_used])
    np.testing.assert_array_equal(opt_ours.state[ours.weight]["exp_avg"].numpy()[never_used], 0)


def logistic_problem(lib, seed: int = 3):
    rng = np.random.default_rng(seed)
    x = lib.tensor(rng.standard_normal((200, 6)))
    y = lib.tensor((rng.random(200) < 0.5).astype(np.float64))
    w = lib.tensor(rng.standard_normal(6) * 0.1, requires_grad=True)
    b = lib.tensor(np.zeros(1), requires_grad=True)

    def loss():
        z = x @ w + b
        # softplus(z) - y z, the logistic loss, written with ops both libraries share
        return (lib.log(1 + lib.exp(-z.abs())) + z.clamp(min=0) - y * z).mean() \
            + 1e-3 * (w * w).sum()

    return [w, b], loss


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("history_size", [100, 2])
def test_lbfgs_tracks_torch_on_a_convex_problem(line_search_fn, history_size) -> None:
    ours, our_loss = logistic_problem(pullback)
    theirs, their_loss = logistic_problem(torch)
    kwargs = {"lr": 1.0 if line_search_fn else 0.5, "line_search_fn": line_search_fn,
              "history_size": history_size, "max_iter": 20}
    opt_ours, opt_theirs = LBFGS(ours, **kwargs), torch.optim.LBFGS(theirs, **kwargs)
    for _ in range(3):
        for opt, loss_fn in ((opt_ours, our_loss), (opt_theirs, their_loss)):
            def closure(opt=opt, loss_fn=loss_fn):
                opt.zero_grad()
                loss = loss_fn()
                loss.backward()
                return loss
            opt.step(closure)
        for p, q in zip(ours, theirs):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=1e-10)
        state, reference = opt_ours.state[ours[0]], opt_theirs.state[theirs[0]]
        assert (state["func_evals"], state["n_iter"]) == (reference["func_evals"],
                                                          reference["n_iter"])


def test_lbfgs_state_dict_resumes_the_same_run() -> None:
    def run(resume: bool) -> np.ndarray:
        params, loss_fn = logistic_problem(pullback)
        opt = LBFGS(params, max_iter=3, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = loss_fn()
            loss.backward()
            return loss

        opt.step(closure)
        if resume:
            import io
            buffer = io.BytesIO()
            pullback.save(opt.state_dict(), buffer)
            opt = LBFGS(params, max_iter=3, line_search_fn="strong_wolfe")
            buffer.seek(0)
            opt.load_state_dict(pullback.load(buffer))
        opt.step(closure)
        return params[0].detach().numpy()

    np.testing.assert_array_equal(run(True), run(False))


def test_lbfgs_refusals_as_torch() -> None:
    a, b = pullback.zeros(2, requires_grad=True), pullback.zeros(2, requires_grad=True)
    with pytest.raises(ValueError):
        torch.optim.LBFGS([{"params": [torch.zeros(2, requires_grad=True)]},
                           {"params": [torch.zeros(2, requires_grad=True)]}])
    with pytest.raises(ParamGroupError, match="one parameter group"):
        LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(TypeError, match="closure"):
        LBFGS([a]).step()
    with pytest.raises(ValueError, match="line_search_fn"):
        LBFGS([a], line_search_fn="backtracking")
