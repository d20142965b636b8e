"""The couplings against the field's libraries, in float64 with identical weights: memcnn's
AdditiveCoupling (RevNet's block), revlib's ReversibleSequential (a deep stack), and for the
affine coupling PyTorch itself (a RealNVP coupling written out, and the log-determinant of
the Jacobian computed by torch.autograd)."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb

torch = pytest.importorskip("torch")

from avyaya_helpers import make_stack, to_torch  # noqa: E402


def _input(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")  # memcnn's own
def test_additive_block_matches_memcnn_forward_inverse_and_gradients():
    memcnn = pytest.importorskip("memcnn")
    stack = make_stack("additive", depth=1, features=8)
    block = stack[0]
    theirs = memcnn.InvertibleModuleWrapper(
        memcnn.AdditiveCoupling(to_torch(torch, block.f), to_torch(torch, block.g), split_dim=1),
        keep_input=False, keep_input_inverse=False)
    x_np = _input((5, 8))

    x = pb.tensor(x_np, requires_grad=True)
    y = stack(x)
    (y * y).sum().backward()

    tx = torch.tensor(x_np, requires_grad=True)
    ty = theirs(tx * 1.0)  # memcnn frees its input's storage; give it a copy
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=0, atol=1e-14)
    np.testing.assert_allclose(stack.inverse(y).detach().numpy(), x_np, rtol=0, atol=1e-14)
    np.testing.assert_allclose(theirs.inverse(ty.detach().clone()).detach().numpy(), x_np,
                               rtol=0, atol=1e-14)
    (ty * ty).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-13)
    mine = [p.grad.numpy() for net in (block.f, block.g) for p in net.parameters()]
    ref = [p.grad.numpy() for net in (theirs._fn.Fm, theirs._fn.Gm) for p in net.parameters()]
    for a, b in zip(mine, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_forty_block_stack_matches_revlib():
    revlib = pytest.importorskip("revlib")
    stack = make_stack("additive", depth=40, features=8)
    # revlib's stream is a sequence of half-steps (x0, x1) -> (x1, x0 + m(x1)): a RevNet block
    # (f, g) is the two half-steps f, g.
    modules = [to_torch(torch, net) for block in stack for net in (block.f, block.g)]
    theirs = revlib.ReversibleSequential(*modules, split_dim=1)
    x_np = _input((6, 8))

    x = pb.tensor(x_np, requires_grad=True)
    y = stack(x)
    (y.sin() * y).sum().backward()
    tx = torch.tensor(x_np, requires_grad=True)
    ty = theirs(tx)
    (ty.sin() * ty).sum().backward()

    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=0, atol=1e-13)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-11, atol=1e-12)
    for p, q in zip(stack.parameters(), theirs.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("condition_on", ["first", "second"])
def test_affine_coupling_matches_pytorch_and_its_jacobian(condition_on):
    stack = make_stack("affine", depth=1, features=6)
    block = stack[0]
    block.condition_on = condition_on
    scale, shift = to_torch(torch, block.scale_net), to_torch(torch, block.shift_net)
    x_np = _input((4, 6))

    def realnvp(x):  # a RealNVP coupling in PyTorch: one half conditions the other
        first, second = x[..., :3], x[..., 3:]
        a, b = (first, second) if condition_on == "first" else (second, first)
        s = scale(a)
        b = b * torch.exp(s) + shift(a)
        return torch.cat([a, b] if condition_on == "first" else [b, a], dim=-1), s.sum(-1)

    y, log_det = block(pb.tensor(x_np))
    ty, t_log_det = realnvp(torch.tensor(x_np))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=0, atol=1e-14)
    np.testing.assert_allclose(log_det.detach().numpy(), t_log_det.detach().numpy(), rtol=1e-13)
    # log|det J| of each sample's own Jacobian, computed by torch.autograd
    for i in range(4):
        jac = torch.autograd.functional.jacobian(lambda v: realnvp(v[None])[0][0],
                                                 torch.tensor(x_np[i]))
        np.testing.assert_allclose(log_det.detach().numpy()[i],
                                   torch.linalg.slogdet(jac)[1].item(), rtol=1e-12)
    np.testing.assert_allclose(block.inverse(y).detach().numpy(), x_np, rtol=0, atol=1e-14)
