"""Gradients where PyTorch has a convention: piecewise-constant ops (zero), remainder and fmod,
max/min along a dim (to the returned index), and edge values on a grid (pow at zero, 0 ** 0,
ties, kinks) against PyTorch; and, over the whole op database, that no op silently drops the
gradient of a float input its output depends on."""

# ruff: noqa: B023 - the lambdas made in loops here are called at once, inside the loop

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import pullback as pb
from pullback.errors import AutogradError
from pullback.testing.compare import flatten_outputs
from pullback.testing.opdb import PullbackFactory, sample_cases

torch = pytest.importorskip("torch", reason="PyTorch, the oracle, is installed for Python 3.11 only")


def _grads(fn_pb: Any, fn_torch: Any, *values: Any) -> tuple[list[Any], list[Any]]:
    """Forward values and the gradients of ``fn(...).sum()`` in both frameworks (float64)."""
    px = [pb.tensor(v, dtype=pb.float64, requires_grad=True) for v in values]
    tx = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    po, to = fn_pb(*px), fn_torch(*tx)
    pg = pb.autograd.grad(po.sum(), px, allow_unused=True)
    tg = torch.autograd.grad(to.sum(), tx, allow_unused=True)
    as_np = [po.detach().numpy()] + [None if g is None else g.numpy() for g in pg]
    as_t = [to.detach().numpy()] + [None if g is None else g.numpy() for g in tg]
    return as_np, as_t


def _same(ours: list[Any], theirs: list[Any], what: str) -> None:
    for i, (a, e) in enumerate(zip(ours, theirs)):
        e = np.zeros_like(ours[0]) if e is None and a is not None else e
        a = np.zeros_like(e) if a is None else a
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12, equal_nan=True,
                                   err_msg=f"{what}: {'value' if i == 0 else f'gradient {i}'}")


X = [-2.5, -1.0, -0.5, 0.0, 0.5, 1.5, 3.0]


@pytest.mark.parametrize("name", ["sign", "floor", "ceil", "round", "trunc"])
def test_piecewise_constant_ops_have_zero_gradients(name: str) -> None:
    ours, theirs = _grads(getattr(pb, name), getattr(torch, name), X)
    _same(ours, theirs, name)
    assert not ours[1].any()


def test_remainder_and_fmod_pass_the_gradient_on() -> None:
    y = [2.0, -1.5, 0.75, 3.0, -2.0, 1.0, 2.5]
    for name in ("remainder", "fmod"):
        _same(*_grads(getattr(pb, name), getattr(torch, name), X, y), name)
    # The case of the issue: x % 3 took no part in the gradient.
    _same(*_grads(lambda x: (x % 3) * x, lambda x: (x % 3) * x, X), "(x % 3) * x")


def test_div_with_a_rounding_mode_has_zero_gradients() -> None:
    y = [2.0, -1.5, 0.75, 3.0, -2.0, 1.0, 2.5]
    for mode in ("trunc", "floor"):
        _same(*_grads(lambda a, b: pb.div(a, b, rounding_mode=mode),
                      lambda a, b: torch.div(a, b, rounding_mode=mode), X, y), mode)


def test_floor_divide_has_no_derivative_and_says_so() -> None:
    x = pb.tensor([1.5, 2.5], requires_grad=True)
    out = (x // 2) * x
    with pytest.raises(AutogradError, match="floor_divide"):
        out.sum().backward()


def _weighted(values: Any, module: Any) -> Any:
    """``values`` times distinct weights, so that each output's gradient can be told apart."""
    n = int(np.prod(values.shape))
    return values * module.tensor(np.arange(1.0, n + 1).reshape(tuple(values.shape)))


def test_max_and_min_along_a_dim_send_the_gradient_to_the_returned_index() -> None:
    ties = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 5.0], [4.0, -1.0, 4.0, -1.0]]
    for name, keep, dim in itertools.product(("max", "min"), (False, True), (0, 1, -1)):
        _same(*_grads(lambda x: _weighted(getattr(x, name)(dim=dim, keepdim=keep)[0], pb),
                      lambda x: _weighted(getattr(x, name)(dim=dim, keepdim=keep)[0], torch),
                      ties), f"{name}(dim={dim}, keepdim={keep})")
    for name in ("max", "min"):  # over all elements ties share it (torch.max(x), like amax)
        _same(*_grads(lambda x: getattr(x, name)(), lambda x: getattr(x, name)(), ties), name)


# -- edge values on a grid --------------------------------------------------------------------

BASES = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
EXPONENTS = [-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0]


def test_pow_on_a_grid_of_bases_and_exponents() -> None:
    base, exponent = np.meshgrid(BASES, EXPONENTS)
    with np.errstate(all="ignore"):
        _same(*_grads(pb.pow, torch.pow, base, exponent), "tensor ** tensor")
        for k in EXPONENTS:
            _same(*_grads(lambda x: x ** k, lambda x: x ** k, BASES), f"x ** {k}")
        for b in BASES:
            _same(*_grads(lambda y: b ** y, lambda y: b ** y, EXPONENTS), f"{b} ** y")
    assert (pb.tensor(0.0) ** 0).item() == 1.0 == (pb.tensor(0.0) ** pb.tensor(0.0)).item()


def test_ties_and_kinks_follow_pytorch() -> None:
    on_ties = [[1.0, 1.0, 0.0], [2.0, -1.0, 2.0]]
    for dim in (None, 0, 1):
        kw = {} if dim is None else {"dim": dim}
        _same(*_grads(lambda x: pb.amax(x, **kw), lambda x: torch.amax(x, **kw), on_ties), "amax")
        _same(*_grads(lambda x: pb.amin(x, **kw), lambda x: torch.amin(x, **kw), on_ties), "amin")
    y = [[1.0, 0.0, 0.0], [2.0, 3.0, 2.0]]
    _same(*_grads(pb.maximum, torch.maximum, on_ties, y), "maximum")
    _same(*_grads(pb.minimum, torch.minimum, on_ties, y), "minimum")
    kinks = [-1.0, 0.0, 1.0, 2.0, -2.0]
    _same(*_grads(lambda x: pb.clamp(x, -1.0, 1.0), lambda x: torch.clamp(x, -1.0, 1.0), kinks),
          "clamp on its bounds")
    _same(*_grads(pb.abs, torch.abs, kinks), "abs at 0")
    _same(*_grads(pb.relu, torch.relu, kinks), "relu at 0")
    F = pytest.importorskip("pullback.nn").functional
    _same(*_grads(F.hardtanh, torch.nn.functional.hardtanh, kinks), "hardtanh at its kinks")
    _same(*_grads(lambda x: F.hardtanh(x, -0.5, 2.0),
                  lambda x: torch.nn.functional.hardtanh(x, -0.5, 2.0), kinks + [-0.5]),
          "hardtanh(-0.5, 2)")


# -- every op of the database --------------------------------------------------------------

CASES = [c for c in sample_cases(dtypes=("float64",)) if c.sample.has_grad_inputs]


def _perturbed_leaves(bound: Any, rng: np.random.Generator) -> list[Any]:
    return [pb.tensor(leaf.numpy() + rng.uniform(0.3, 0.7, tuple(leaf.shape)))
            for leaf in (lf.detach() for lf in bound.leaves)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_no_op_drops_the_gradient_of_a_float_input_silently(case: Any) -> None:
    bound = case.sample.bind(PullbackFactory(), differentiable=True)
    with np.errstate(all="ignore"):
        outs = flatten_outputs(bound.call(case.record.fn))
        moved = flatten_outputs(bound.call(case.record.fn, _perturbed_leaves(
            bound, np.random.default_rng(0))))
    for i, (out, other) in enumerate(zip(outs, moved)):
        if not isinstance(out, pb.Tensor) or out.dtype.kind != "f":
            continue
        a, b = out.detach().numpy(), other.detach().numpy()
        depends = a.shape != b.shape or not np.array_equal(a, b, equal_nan=True)
        if not depends:
            continue
        assert out.requires_grad, (
            f"{case.id}: output {i} depends on a float input but takes no part in the graph")
        try:
            with np.errstate(all="ignore"):  # samples with inf/nan on purpose
                out.sum().backward(retain_graph=True)
        except AutogradError as exc:  # an op without a derivative must say which op
            assert any(op in str(exc) for op in case.record.ops), str(exc)
