"""vmap's API: in_dims/out_dims (None, negative, pytrees), nesting, randomness, chunk_size,
in-place ops, the errors it raises, and that the work it dispatches does not grow with the
batch."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.dispatch import DispatchMode
from pullback.func import MissingRuleError, VmapError, vmap


def _rand(*shape: int, seed: int = 0) -> pb.Tensor:
    return pb.tensor(np.random.default_rng(seed).standard_normal(shape))


def test_in_dims_none_negative_and_out_dims() -> None:
    x, w = _rand(3, 5), _rand(5, 4)
    out = vmap(lambda a, b: a @ b, in_dims=(-1, None), out_dims=-1)(x.T.contiguous(), w)
    np.testing.assert_allclose(out.numpy(), (x.numpy() @ w.numpy()).T)


def test_pytrees_in_and_out() -> None:
    params = {"w": _rand(4, 3), "b": _rand(3, seed=1)}
    xs = [_rand(6, 4, seed=2), _rand(6, 3, seed=3)]

    def f(p, pair):
        y = pair[0] @ p["w"] + p["b"] + pair[1]
        return {"y": y, "parts": (y.sum(), y * 2)}

    out = vmap(f, in_dims=(None, [0, 0]))(params, xs)
    want = xs[0].numpy() @ params["w"].numpy() + params["b"].numpy() + xs[1].numpy()
    np.testing.assert_allclose(out["y"].numpy(), want)
    np.testing.assert_allclose(out["parts"][0].numpy(), want.sum(1))
    np.testing.assert_allclose(out["parts"][1].numpy(), 2 * want)


def test_dict_in_dims_per_key() -> None:
    d = {"a": _rand(5, 2), "b": _rand(2, 5, seed=1)}
    out = vmap(lambda t: t["a"] * t["b"], in_dims=({"a": 0, "b": 1},))(d)
    np.testing.assert_allclose(out.numpy(), d["a"].numpy() * d["b"].numpy().T)


def test_unbatched_output_is_broadcast() -> None:
    out = vmap(lambda x: pb.ones(2), in_dims=0)(_rand(4, 3))
    assert tuple(out.shape) == (4, 2)


def test_nested_vmap_outer_products() -> None:
    x, y = _rand(3), _rand(4, seed=1)
    out = vmap(vmap(pb.mul, in_dims=(None, 0)), in_dims=(0, None))(x, y)
    np.testing.assert_allclose(out.numpy(), np.outer(x.numpy(), y.numpy()))


def test_chunk_size_matches_one_pass() -> None:
    x = _rand(10, 3)
    f = vmap(lambda r: (r.exp() * r).sum(), chunk_size=3)
    np.testing.assert_allclose(f(x).numpy(), vmap(lambda r: (r.exp() * r).sum())(x).numpy())
    with pytest.raises(ValueError, match="chunk_size"):
        vmap(pb.exp, chunk_size=0)


def test_randomness() -> None:
    x = pb.zeros(4, 3)
    with pytest.raises(VmapError, match="randomness='error'"):
        vmap(lambda r: r + pb.rand(3))(x)
    same = vmap(lambda r: r + pb.rand(3), randomness="same")(x).numpy()
    assert np.all(same == same[0])
    different = vmap(lambda r: r + pb.rand(3), randomness="different")(x).numpy()
    assert len({tuple(row) for row in different}) == 4
    nested = vmap(vmap(lambda r: r + pb.randn(()), randomness="different"),
                  randomness="different")(x).numpy()
    assert len(set(nested.ravel().tolist())) == 12
    with pytest.raises(ValueError, match="randomness"):
        vmap(pb.exp, randomness="sometimes")


def test_dropout_different_per_sample() -> None:
    nnf = pytest.importorskip("pullback.nn.functional")
    out = vmap(lambda r: nnf.dropout(r, 0.5), randomness="different")(pb.ones(6, 50)).numpy()
    assert len({tuple(row) for row in out}) == 6 and set(np.unique(out)) <= {0.0, 2.0}


def test_inplace_on_batched_tensors() -> None:
    x, y = _rand(4, 3), _rand(3, seed=1)

    def f(a, b):
        c = a.clone()
        c.mul_(2).add_(b)
        c[0] = 7.0
        c.clamp_(max=5.0)
        return c

    want = np.clip(np.concatenate([np.full((4, 1), 7.0), (2 * x.numpy() + y.numpy())[:, 1:]], 1),
                   None, 5.0)
    np.testing.assert_allclose(vmap(f, in_dims=(0, None))(x, y).numpy(), want)


def test_inplace_into_an_unbatched_tensor_is_an_error() -> None:
    shared = pb.zeros(3)
    with pytest.raises((VmapError, pb.errors.ShapeError), match="in place|batched"):
        vmap(lambda a: shared.add_(a))(_rand(4, 3))


def test_inplace_write_reaches_the_input() -> None:
    x = _rand(4, 3)
    before = x.numpy().copy()
    vmap(lambda a: a.mul_(3.0))(x)
    np.testing.assert_allclose(x.numpy(), 3.0 * before)


def test_batched_index_tensor() -> None:
    table, idx = _rand(5, 2), pb.tensor([[0, 4], [3, 3], [1, 0]])
    out = vmap(lambda i: table[i] * 2)(idx)
    np.testing.assert_allclose(out.numpy(), table.numpy()[idx.numpy()] * 2)


def test_data_dependent_python_is_an_error() -> None:
    with pytest.raises(VmapError, match="bool\\(\\)"):
        vmap(lambda a: a if a.sum() > 0 else -a)(_rand(4, 3))
    with pytest.raises(VmapError, match="item\\(\\)"):
        vmap(lambda a: a.sum().item())(_rand(4, 3))


def test_argument_errors() -> None:
    x = _rand(4, 3)
    with pytest.raises(VmapError, match="out of range"):
        vmap(pb.exp, in_dims=2)(x)
    with pytest.raises(VmapError, match="batch size"):
        vmap(pb.add)(x, _rand(5, 3))
    with pytest.raises(VmapError, match="no argument is batched"):
        vmap(pb.exp, in_dims=None)(x)
    with pytest.raises(ValueError, match="structure"):
        vmap(pb.add, in_dims=((0, 0),))(x, x)
    with pytest.raises(VmapError, match="out_dim is None"):
        vmap(pb.exp, out_dims=None)(x)


def test_missing_rule_names_the_op() -> None:
    from pullback.registry import Op, register_op, OPS

    op = register_op(Op("test.unbatchable", lambda xp: lambda x: x + 1), owner="tests")
    try:
        from pullback.dispatch import apply

        with pytest.raises(MissingRuleError, match="'test.unbatchable'.*register_rules"):
            vmap(lambda a: apply(op, a))(_rand(4, 3))
    finally:
        del OPS["test.unbatchable"]


def test_loop_fallback_warns_once_and_is_correct() -> None:
    from pullback.dispatch import apply
    from pullback.func import VmapFallbackWarning, loop_fallback
    from pullback.registry import OPS, Op, register_op

    op = register_op(Op("test.looped", lambda xp: lambda x: x * x.sum()), owner="tests")
    op.set_rule("batch", loop_fallback)
    try:
        x = _rand(4, 3)
        with pytest.warns(VmapFallbackWarning, match="test.looped"):
            out = vmap(lambda a: apply(op, a))(x)
        np.testing.assert_allclose(out.numpy(), x.numpy() * x.numpy().sum(1, keepdims=True))
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            vmap(lambda a: apply(op, a))(x)  # warned once already
    finally:
        del OPS["test.looped"]


class _Counter(DispatchMode):
    def __init__(self) -> None:
        self.count = 0

    def dispatch(self, op, args, attrs):
        self.count += 1
        return super().dispatch(op, args, attrs)


def _mlp_ops(batch: int) -> int:
    w1, w2 = _rand(8, 16), _rand(16, 4, seed=1)
    x = _rand(batch, 8, seed=2)
    counter = _Counter()
    with counter:  # below vmap: it sees the batched ops that reach the kernels
        vmap(lambda r: pb.logsumexp(pb.tanh(r @ w1) @ w2, axis=0))(x)
    return counter.count


def test_dispatched_ops_do_not_grow_with_the_batch() -> None:
    assert _mlp_ops(2) == _mlp_ops(64) == _mlp_ops(512)


class _ScaleByArray(pb.autograd.Function):
    """A custom Function whose forward computes on raw arrays, as many do."""

    @staticmethod
    def forward(ctx, x):
        return pb.tensor(x.array * 2.0 + x.array.mean())

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


class _ScaleByOps(pb.autograd.Function):
    generate_vmap_rule = True  # its forward uses pullback ops only

    @staticmethod
    def forward(ctx, x):
        return x * 2.0 + x.mean()

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def test_a_custom_function_on_batched_tensors_is_refused_unless_built_from_ops():
    x = pb.tensor(np.arange(6.0).reshape(3, 2))
    # Run on the physical array, the first Function would mix the samples' means silently.
    with pytest.raises(VmapError, match="_ScaleByArray.*generate_vmap_rule"):
        vmap(_ScaleByArray.apply)(x)
    got = vmap(_ScaleByOps.apply)(x).numpy()
    want = np.stack([_ScaleByOps.apply(x[i]).numpy() for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
