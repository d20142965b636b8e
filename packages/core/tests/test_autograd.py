"""Autograd engine: backward/grad semantics, higher order, hooks, graph lifetime, Functions."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import pullback as pb
from pullback.autograd import Function, checkpoint, grad
from pullback.autograd.functional import hessian, hvp, jacobian
from pullback.errors import AutogradError, ShapeError


def t64(a, requires_grad=True):
    return pb.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


# -- basic semantics ------------------------------------------------------------------------------

def test_leaf_gradients_accumulate_across_backward_calls():
    x = t64([1.0, 2.0])
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, 2.0]) + 3)


def test_shared_gradient_array_is_not_aliased_between_leaves():
    # add's rule hands the same array to both inputs; each .grad must own its memory.
    x, y = t64([1.0, 2.0]), t64([3.0, 4.0])
    (x + y).sum().backward()
    x.grad.mul_(10)
    np.testing.assert_allclose(y.grad.numpy(), [1.0, 1.0])


def test_view_gradient_is_not_aliased():
    x, w = t64([[1.0, 2.0]]), t64([1.0, 1.0])
    (x.reshape(2) + w).sum().backward()
    w.grad.mul_(5)
    np.testing.assert_allclose(x.grad.numpy(), [[1.0, 1.0]])


def test_backward_non_scalar_needs_gradient():
    x = t64([1.0, 2.0])
    with pytest.raises(AutogradError, match="scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(pb.tensor([1.0, 10.0], dtype=pb.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])


def test_backward_gradient_shape_must_match():
    x = t64([1.0, 2.0])
    with pytest.raises(ShapeError, match=r"\(3,\).*\(2,\)"):
        (x * 2).backward(pb.ones(3, dtype=pb.float64))


def test_second_backward_through_freed_graph_is_an_error():
    x = t64([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(AutogradError, match="second time"):
        y.backward()


def test_retain_graph_allows_second_backward():
    x = t64([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)


def test_output_without_graph_is_an_error():
    x = t64([1.0], requires_grad=False)
    with pytest.raises(AutogradError, match="does not require grad"):
        (x * 2).sum().backward()


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(pb.DTypeError, match="int64"):
        pb.tensor([1, 2], requires_grad=True)


def test_integer_outputs_do_not_require_grad():
    x = t64([1.5, 2.5])
    assert not x.argmax().requires_grad
    assert not (x > 2).requires_grad
    assert not x.to(pb.int64).requires_grad


def test_grad_returns_without_touching_dot_grad():
    x = t64([1.0, 2.0, 3.0])
    (g,) = grad((x**3).sum(), x)
    np.testing.assert_allclose(g.numpy(), 3 * np.array([1.0, 2.0, 3.0]) ** 2)
    assert x.grad is None


def test_grad_with_respect_to_intermediate():
    x = t64([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    gh, gx = grad(y, [h, x])
    np.testing.assert_allclose(gh.numpy(), 2 * 3 * np.array([1.0, 2.0]))
    np.testing.assert_allclose(gx.numpy(), 18 * np.array([1.0, 2.0]))


def test_grad_allow_unused():
    x, z = t64([1.0]), t64([2.0])
    with pytest.raises(AutogradError, match="not used"):
        grad((x * 2).sum(), [x, z])
    gx, gz = grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None and gx.item() == 2.0


def test_grad_prunes_branches_that_do_not_reach_inputs():
    calls = []

    class Spy(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1.0

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g

    x, w = t64([1.0]), t64([2.0])
    y = (x * 2 + Spy.apply(w)).sum()
    grad(y, x)
    assert calls == []


def test_backward_inputs_restricts_accumulation():
    x, w = t64([1.0]), t64([2.0])
    (x * w).sum().backward(inputs=[x])
    assert x.grad.item() == 2.0 and w.grad is None


def test_broadcast_gradients_are_summed_to_input_shape():
    a = t64(np.ones((3, 1)))
    b = t64(np.arange(4.0))
    (a * b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), 6.0))
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 3.0))


def test_grad_dtype_matches_input_dtype():
    x = pb.tensor([1.0, 2.0], dtype=pb.float32, requires_grad=True)
    (x * pb.tensor([1.0, 2.0], dtype=pb.float64)).sum().backward()
    assert x.grad.dtype == pb.float32


# -- higher order --------------------------------------------------------------------------------

def test_third_derivative_of_sin():
    x = t64([0.3, 1.1])
    (g1,) = grad(x.sin().sum(), x, create_graph=True)
    (g2,) = grad(g1.sum(), x, create_graph=True)
    (g3,) = grad(g2.sum(), x)
    np.testing.assert_allclose(g3.numpy(), -np.cos([0.3, 1.1]), rtol=1e-14)


def test_backward_create_graph_makes_grad_differentiable():
    x = t64([2.0])
    (x**4).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    (h,) = grad(g.sum(), x)
    assert h.item() == pytest.approx(12 * 4.0)


def _mlp_loss(params, data, target):
    w1, b1, w2, b2 = params
    h = (data @ w1 + b1).tanh()
    out = h @ w2 + b2
    return ((out - target) ** 2).mean()


def test_hessian_of_small_mlp_matches_torch_func_hessian():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (4,), (4, 2), (2,)]
    sizes = [int(np.prod(s)) for s in shapes]
    flat = rng.standard_normal(sum(sizes))
    data = rng.standard_normal((5, 3))
    target = rng.standard_normal((5, 2))

    def split(vec, lib):
        out, i = [], 0
        for s, n in zip(shapes, sizes):
            out.append(vec[i:i + n].reshape(s))
            i += n
        return out

    ours = hessian(lambda v: _mlp_loss(split(v, pb), t64(data, False), t64(target, False)),
                   t64(flat, False))
    theirs = torch.func.hessian(
        lambda v: _mlp_loss(split(v, torch), torch.tensor(data), torch.tensor(target))
    )(torch.tensor(flat))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_hvp_matches_hessian_times_vector():
    rng = np.random.default_rng(1)
    x0, v = rng.standard_normal(4), rng.standard_normal(4)
    f = lambda x: (x.exp() * x.sin()).sum() + (x * x).prod()  # noqa: E731
    H = hessian(f, t64(x0, False)).numpy()
    _, hv = hvp(f, t64(x0, False), t64(v, False))
    np.testing.assert_allclose(hv.numpy(), H @ v, rtol=1e-12)


def test_jacobian_matches_torch():
    torch = pytest.importorskip("torch")
    x0 = np.array([0.5, -1.0, 2.0])
    J = jacobian(lambda x: x.tanh() * x.sum(), t64(x0, False))
    Jt = torch.autograd.functional.jacobian(lambda x: x.tanh() * x.sum(), torch.tensor(x0))
    np.testing.assert_allclose(J.numpy(), Jt.numpy(), rtol=1e-13)


# -- hooks, retain_grad, detach -------------------------------------------------------------------

def test_hook_on_leaf_replaces_gradient():
    x = t64([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    (x * 3).sum().backward()
    np.testing.assert_allclose(seen[0], [3.0, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])


def test_hook_on_intermediate_sees_total_gradient_and_can_be_removed():
    x = t64([1.0])
    h = x * 2
    seen = []
    handle = h.register_hook(lambda g: seen.append(g.item()))
    (h * 3 + h * 4).sum().backward(retain_graph=True)
    assert seen == [7.0]
    handle.remove()
    (h * 3 + h * 4).sum().backward()
    assert seen == [7.0]


def test_retain_grad_on_intermediate():
    x = t64([1.0, 2.0])
    h = x * x
    h.retain_grad()
    (h * 5).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [5.0, 5.0])


def test_detach_cuts_the_graph_and_shares_data():
    x = t64([1.0, 2.0])
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf
    y = (x * d).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


# -- grad modes -----------------------------------------------------------------------------------

def test_no_grad_and_enable_grad_nest():
    x = t64([1.0])
    with pb.no_grad():
        assert not (x * 2).requires_grad
        with pb.enable_grad():
            assert (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_no_grad_as_decorator():
    x = t64([1.0])

    @pb.no_grad()
    def f(a):
        return a * 2

    assert not f(x).requires_grad


def test_set_grad_enabled_applies_immediately_and_as_context():
    x = t64([1.0])
    with pb.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert pb.is_grad_enabled()


def test_grad_mode_is_thread_local():
    x = t64([1.0])
    result = {}

    def worker():
        result["requires"] = (x * 2).requires_grad

    with pb.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert result["requires"] is True


def test_inference_mode_tensors_cannot_be_saved_for_backward():
    x = t64([1.0, 2.0])
    with pb.inference_mode():
        c = pb.tensor([3.0, 4.0], dtype=pb.float64) * 1.0
        assert not (x * 2).requires_grad
    with pytest.raises(AutogradError, match="inference"):
        x * c


# -- graph lifetime -------------------------------------------------------------------------------

def test_graph_is_freed_when_output_is_dropped():
    x = t64(np.ones(10))
    y = (x * 2).exp().sum()
    node = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert node() is None


def test_no_reference_cycles_in_a_graph():
    x = t64(np.ones(10))
    gc.collect()
    gc.disable()
    try:
        y = ((x * 2).tanh() @ x).sum()
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None  # freed by reference counting alone, no collector needed
    finally:
        gc.enable()


def test_graph_is_released_after_backward():
    x = t64(np.ones(3))
    y = (x * 2).exp().sum()
    y.backward()
    assert y.grad_fn.released


def test_hundred_thousand_op_chain():
    x = t64([1.0, 2.0])
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


# -- in-place ops and version counter ---------------------------------------------------------------

def test_modifying_saved_tensor_in_place_is_detected():
    x = t64([1.0, 2.0])
    a = x * 2
    b = (a * a).sum()
    with pb.no_grad():
        a.add_(1)
    with pytest.raises(AutogradError, match="modified in place"):
        b.backward()


def test_in_place_on_input_of_add_is_fine():
    x = t64([1.0, 2.0])
    a = x * 2
    b = (a + 1).sum()
    with pb.no_grad():
        a.mul_(3)
    b.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_in_place_on_leaf_requiring_grad_is_refused():
    x = t64([1.0])
    with pytest.raises(AutogradError, match="leaf"):
        x.add_(1)
    with pb.no_grad():
        x.add_(1)
    assert x.item() == 2.0


def test_recorded_in_place_op_is_differentiated():
    x = t64([1.0, 2.0])
    a = x * 1.0
    a.mul_(3).exp_()
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(3 * np.array([1.0, 2.0])))


def test_in_place_through_a_view_writes_the_base():
    base = pb.zeros(2, 3)
    row = base[1]
    row.add_(5)
    np.testing.assert_allclose(base.numpy()[1], [5.0, 5.0, 5.0])


def test_reshape_that_copies_is_not_a_view():
    x = t64([[1.0, 2.0], [3.0, 4.0]])
    y = x * 2
    loss = (y * y).sum()  # saves y
    flat = y.T.reshape(-1)  # a transpose cannot be flattened in place: a copy
    with pb.no_grad():
        flat.add_(1)  # writes the copy only, so y's saved value is intact
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 8 * x.detach().numpy())
    np.testing.assert_allclose(y.detach().numpy(), 2 * x.detach().numpy())


def test_reshape_that_views_shares_the_version_counter():
    x = t64([[1.0, 2.0], [3.0, 4.0]])
    y = x * 2
    loss = (y * y).sum()
    flat = y.reshape(-1)  # contiguous: a view of y
    with pb.no_grad():
        flat.add_(1)
    assert y.detach().numpy()[0, 0] == 3.0
    with pytest.raises(AutogradError, match="modified in place"):
        loss.backward()


def _slice_losses(h):
    q, k, v = h.split(2, dim=1)
    a, b = h[:, :3], h[:, 2:]  # overlapping slices
    return (q * 1.0 + k * 2.0 + v * 3.0).sum() + (a * a).sum() + (b * 5.0).sum()


def _slice_grad_expected(x):
    """d/dx of _slice_losses(x * 2.0), written out."""
    h = 2.0 * x
    g = np.repeat([1.0, 2.0, 3.0], 2)[None, :] + np.zeros_like(h)
    g[:, :3] += 2.0 * h[:, :3]
    g[:, 2:] += 5.0
    return 2.0 * g


def test_slices_of_one_tensor_sum_their_gradients():
    data = np.random.default_rng(0).normal(size=(4, 6))
    x = pb.tensor(data, requires_grad=True)
    loss = _slice_losses(x * 2.0)
    loss.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.numpy(), _slice_grad_expected(data), rtol=1e-12)
    x.grad = None
    loss.backward()  # a second run through the retained graph
    np.testing.assert_allclose(x.grad.numpy(), _slice_grad_expected(data), rtol=1e-12)
    # the same through grad() with explicit inputs, and under create_graph (the general path)
    (gx,) = grad(_slice_losses(x * 2.0), [x], create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), _slice_grad_expected(data), rtol=1e-12)
    leaf = pb.tensor(data, requires_grad=True)  # slices of a leaf itself
    _slice_losses(leaf).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), _slice_grad_expected(data / 2.0) / 2.0,
                               rtol=1e-12)


def test_slice_gradient_added_in_place_is_not_seen_by_other_consumers():
    x = pb.tensor(np.ones((2, 4)), requires_grad=True)
    h = x * 3.0
    seen = []
    h.register_hook(lambda g: seen.append(g.numpy().copy()))
    first, second = h[:, :2], h[:, 2:]
    (first.sum() + 2.0 * second.sum() + h.sum()).backward()
    expected = np.array([[2.0, 2.0, 3.0, 3.0]] * 2)
    np.testing.assert_allclose(seen[0], expected)
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * expected)


def test_setitem_refused_on_graph_tensors_allowed_otherwise():
    x = t64([1.0, 2.0])
    with pytest.raises(AutogradError, match="setitem"):
        x[0] = 5.0
    y = pb.zeros(3)
    y[1:] = pb.tensor([1.0, 2.0])
    np.testing.assert_allclose(y.numpy(), [0.0, 1.0, 2.0])


def test_setitem_on_saved_tensor_is_detected_at_backward():
    x = t64([1.0, 2.0])
    w = pb.tensor([3.0, 4.0], dtype=pb.float64)
    y = (x * w).sum()
    w[0] = 100.0
    with pytest.raises(AutogradError, match="modified in place"):
        y.backward()


def test_in_place_dtype_that_cannot_be_stored_is_an_error():
    i = pb.tensor([1, 2])
    with pytest.raises(pb.DTypeError, match="int64"):
        i.add_(0.5)


# -- user Functions ----------------------------------------------------------------------------------

class _MulAdd(Function):
    @staticmethod
    def forward(ctx, x, y, k):
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y + k

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x, None


def test_function_forward_backward_and_needs_input_grad():
    x, y = t64([2.0]), t64([3.0], requires_grad=False)
    seen = {}

    class Probe(_MulAdd):
        @staticmethod
        def backward(ctx, g):
            seen["needs"] = ctx.needs_input_grad
            return _MulAdd.backward(ctx, g)

    out = Probe.apply(x, y, 1.0)
    out.sum().backward()
    assert out.item() == 7.0 and x.grad.item() == 3.0
    assert seen["needs"] == (True, False, False)


def test_function_backward_is_differentiable_under_create_graph():
    x = t64([2.0])
    (g,) = grad(_MulAdd.apply(x, x, 0.0).sum(), x, create_graph=True)
    (h,) = grad(g.sum(), x)
    assert g.item() == 4.0 and h.item() == 2.0


def test_function_with_two_outputs_and_non_differentiable_one():
    class SortLike(Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.argmax()
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, g_idx):
            return g * 2

    x = t64([1.0, 5.0])
    y, idx = SortLike.apply(x)
    assert not idx.requires_grad and idx.item() == 1
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_function_saving_its_output_does_not_leak():
    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out

    x = t64([0.5])
    y = Exp.apply(x)
    node = weakref.ref(y.grad_fn.node)
    y.sum().backward(retain_graph=True)
    assert x.grad.item() == pytest.approx(np.exp(0.5))
    gc.disable()
    try:
        del y
        assert node() is None
    finally:
        gc.enable()


def test_function_wrong_number_of_gradients_names_the_function():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(AutogradError, match="Bad.backward returned 2"):
        Bad.apply(t64([1.0])).sum().backward()


# -- checkpointing -------------------------------------------------------------------------------------

def test_checkpoint_matches_plain_gradients_including_random_ops():
    rng = np.random.default_rng(0)
    w_np = rng.standard_normal((4, 4))

    def block(inp, w):
        noise = pb.rand(*inp.shape, dtype=pb.float64)  # replayed identically on recompute
        return ((inp @ w).tanh() * noise).sum(axis=1)

    def run(use_checkpoint):
        pb.manual_seed(3)
        x = t64(rng_x)
        w = t64(w_np)
        out = checkpoint(block, x, w) if use_checkpoint else block(x, w)
        out.sum().backward()
        return x.grad.numpy(), w.grad.numpy()

    rng_x = rng.standard_normal((3, 4))
    plain, ckpt = run(False), run(True)
    np.testing.assert_allclose(ckpt[0], plain[0], rtol=1e-14)
    np.testing.assert_allclose(ckpt[1], plain[1], rtol=1e-14)


# -- dispatch modes ------------------------------------------------------------------------------------

class _Recorder(pb.DispatchMode):
    def __init__(self):
        self.ops = []
        self.backward_ops = []

    def dispatch(self, op, args, attrs):
        self.ops.append(op.name)
        return pb.apply(op, *args, **attrs)

    def on_backward(self, node, grad_in, grads_out):
        self.backward_ops.append(node.name)


def test_recording_mode_sees_forward_and_backward_ops():
    x = t64([1.0, 2.0])
    with _Recorder() as rec:
        y = (x * 2).exp().sum()
        y.backward()
    assert rec.ops[:3] == ["mul", "exp", "sum"]
    assert rec.backward_ops == ["sum", "exp", "mul"]
    assert pb.dispatch.active_modes() == ()


def test_nested_modes_both_see_ops():
    x = t64([1.0])
    with _Recorder() as outer, _Recorder() as inner:
        x * 2
    assert outer.ops == ["mul"] and inner.ops == ["mul"]


def test_create_graph_sees_values_from_before_a_recorded_in_place_op():
    x = t64([0.7])
    a = x * 2.0
    b = a * a  # saves a = 2x
    a.mul_(5)  # re-points a at 10x
    (g,) = grad(b.sum() + a.sum(), x, create_graph=True)
    assert g.item() == pytest.approx(8 * 0.7 + 10)
    (h,) = grad(g.sum(), x)
    assert h.item() == pytest.approx(8.0)


def test_function_outputs_in_bfloat16_carry_gradients():
    class Identity(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1

        @staticmethod
        def backward(ctx, g):
            return g

    x = pb.ones(2, 3, dtype=pb.bfloat16, requires_grad=True)
    y = Identity.apply(x)
    assert y.requires_grad
    y.float().sum().backward()
    assert x.grad.dtype == pb.bfloat16 and x.grad.float().numpy().sum() == 6.0


def test_vjp_matches_torch_and_gives_zeros_for_an_unused_input():
    torch = pytest.importorskip("torch", reason="PyTorch is the numerical oracle")
    from pullback.autograd.functional import vjp

    rng = np.random.default_rng(12)
    a, v = rng.standard_normal(5), rng.standard_normal(5)
    y, g = vjp(lambda x: pb.tanh(x) * x, pb.tensor(a), pb.tensor(v))
    ty, tg = torch.autograd.functional.vjp(lambda x: torch.tanh(x) * x, torch.tensor(a),
                                           torch.tensor(v))
    np.testing.assert_allclose(y.numpy(), ty.numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)
    const = pb.tensor(v)
    _, unused = vjp(lambda x: const * 2.0, pb.tensor(a), pb.tensor(v))
    _, t_unused = torch.autograd.functional.vjp(lambda x: torch.tensor(v) * 2.0, torch.tensor(a),
                                                torch.tensor(v))
    np.testing.assert_array_equal(unused.numpy(), t_unused.numpy())
    assert unused.shape == (5,) and unused.dtype == pb.float64


def test_backward_casts_the_incoming_gradient_to_the_outputs_dtype():
    # PyTorch casts gradient= to the output's dtype: a float32 gradient on a float64 graph
    # must not round its gradients to float32 (gelu's rule multiplied in float32 before).
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x_np, g_np = rng.standard_normal(50), rng.standard_normal(50).astype(np.float32)
    x = pb.tensor(x_np, requires_grad=True)
    (pb.gelu(x) * 3.0).backward(pb.tensor(g_np))
    tx = torch.tensor(x_np, requires_grad=True)
    (torch.nn.functional.gelu(tx) * 3.0).backward(torch.tensor(g_np))
    assert x.grad.dtype == pb.float64
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-13, atol=0)
    # grad() and create_graph: the cast is differentiable
    y = pb.tensor(x_np, requires_grad=True)
    g = pb.tensor(g_np, requires_grad=True)
    (gy,) = pb.autograd.grad(pb.sin(y), y, grad_outputs=g, create_graph=True)
    assert gy.dtype == pb.float64
    gy.sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), np.cos(x_np).astype(np.float32), rtol=1e-6)
    assert g.grad.dtype == pb.float32


def test_backward_refuses_a_gradient_on_another_device(numpy_backend, throwaway_plugin):
    from pullback.hookspecs import hookimpl

    class Plugin:
        pullback_hook_api = "1.0"

        @hookimpl
        def register_backends(self, register):
            register(numpy_backend("fakegrad"))

    throwaway_plugin(Plugin(), "fakegrad-plugin")
    x = pb.ones(3, requires_grad=True)
    other = pb.ones(3).to("fakegrad")
    with pytest.raises(pb.errors.DeviceError, match="gradient 0 is on fakegrad"):
        (x * 2).backward(other)
