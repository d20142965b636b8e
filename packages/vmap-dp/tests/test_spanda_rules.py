"""The batch and jvp rules pullback-spanda registers for its ops through ``register_rules``
(``spanda.spike``, ``spanda.leaky``): vmap against a loop over samples (batch dims at 0 and -1,
batched parameters), jvp against central differences where the derivative is the true one (a
detached reset, away from the threshold) and against vjp by the transpose identity everywhere
(a reset through the surrogate has no true derivative to difference), and a spiking layer under
vmap(grad) and jvp."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.dispatch import apply
from pullback.func import functional_call, grad, jvp, vjp, vmap

spanda = pytest.importorskip("pullback.spanda")
from pullback.spanda._ops.leaky import FORMS, LEAKY  # noqa: E402
from pullback.spanda._ops.spike import SPIKE  # noqa: E402

T, B, N = 5, 4, 3
SG = spanda.surrogate.fast_sigmoid(slope=4.0)


def leaky(form, detach, sequence=True):
    def run(x, u0, beta, thr):
        return apply(LEAKY, x, u0, beta, thr, reset=form, detach_reset=detach, surrogate=SG,
                     sequence=sequence)
    return run


def spike(u, thr):
    return apply(SPIKE, u, thr, surrogate=SG)


def _inputs(seed, sequence=True):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.5, 1.5, (T, B, N) if sequence else (B, N))
    u0 = rng.uniform(-0.5, 1.5, (B, N))
    beta = rng.uniform(0.5, 0.9, N)
    thr = rng.uniform(0.8, 1.2, N)
    return x, u0, beta, thr


@pytest.mark.parametrize("sequence", [True, False])
@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("form", FORMS)
def test_vmap_of_leaky_matches_a_loop(form, detach, sequence) -> None:
    """Samples along x's neuron batch (dim 1 of a sequence, or last), and beta batched too."""
    fn = leaky(form, detach, sequence)
    x, u0, beta, thr = _inputs(0, sequence)
    samples_x = x.shape[-1]  # vmap over the last dim of x and u0: each sample one neuron column
    betas = np.random.default_rng(1).uniform(0.5, 0.9, samples_x)
    out = vmap(fn, in_dims=(-1, -1, 0, None))(pb.tensor(x), pb.tensor(u0), pb.tensor(betas),
                                              pb.tensor(thr[0]))
    want = np.stack([fn(pb.tensor(x[..., i]), pb.tensor(u0[..., i]), pb.tensor(betas[i]),
                        pb.tensor(thr[0])).numpy() for i in range(samples_x)])
    np.testing.assert_array_equal(out.numpy(), want)


def test_vmap_of_leaky_with_unbatched_input_and_batched_threshold() -> None:
    fn = leaky("subtract", True)
    x, u0, beta, _ = _inputs(2)
    thresholds = np.array([0.7, 1.0, 1.3])
    out = vmap(fn, in_dims=(None, None, None, 0))(pb.tensor(x), pb.tensor(u0), pb.tensor(beta),
                                                  pb.tensor(thresholds))
    want = np.stack([fn(pb.tensor(x), pb.tensor(u0), pb.tensor(beta), pb.tensor(t)).numpy()
                     for t in thresholds])
    np.testing.assert_array_equal(out.numpy(), want)


@pytest.mark.parametrize("in_dims", [(0, None), (1, 0), (None, 0), (0, 0)])
def test_vmap_of_spike_matches_a_loop(in_dims) -> None:
    rng = np.random.default_rng(3)
    u = rng.uniform(0, 2, (B, N))
    thr = rng.uniform(0.8, 1.2, (B,)) if in_dims[1] == 0 else np.float64(1.0)
    u_in = u.T if in_dims[0] == 1 else (u[0] if in_dims[0] is None else u)
    out = vmap(spike, in_dims=in_dims)(pb.tensor(u_in), pb.tensor(thr))
    u_at = (lambda i: u[0]) if in_dims[0] is None else (lambda i: u[i])
    t_at = (lambda i: thr[i]) if in_dims[1] == 0 else (lambda i: thr)
    want = np.stack([spike(pb.tensor(u_at(i)), pb.tensor(t_at(i))).numpy() for i in range(B)])
    np.testing.assert_array_equal(out.numpy(), want)


def _tangents(seed, primals):
    rng = np.random.default_rng(seed)
    return tuple(pb.tensor(rng.standard_normal(tuple(p.shape))) for p in primals)


@pytest.mark.parametrize("sequence", [True, False])
@pytest.mark.parametrize("form", FORMS)
def test_jvp_of_leaky_matches_central_differences(form, sequence) -> None:
    """A detached reset: the spikes are piecewise constant, so away from the threshold the
    derivative the rules use is the true one."""
    fn = leaky(form, True, sequence)
    primals = tuple(pb.tensor(a) for a in _inputs(4, sequence))
    tangents = _tangents(5, primals)
    out, tangent = jvp(fn, primals, tangents)
    assert np.min(np.abs(out.numpy() - primals[3].numpy())) > 1e-4  # no threshold within eps
    eps = 1e-6
    plus = fn(*(pb.tensor(p.numpy() + eps * t.numpy()) for p, t in zip(primals, tangents)))
    minus = fn(*(pb.tensor(p.numpy() - eps * t.numpy()) for p, t in zip(primals, tangents)))
    numeric = (plus.numpy() - minus.numpy()) / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sequence", [True, False])
@pytest.mark.parametrize("detach", [True, False])
@pytest.mark.parametrize("form", FORMS)
def test_jvp_of_leaky_is_the_transpose_of_its_vjp(form, detach, sequence) -> None:
    fn = leaky(form, detach, sequence)
    primals = tuple(pb.tensor(a) for a in _inputs(6, sequence))
    tangents = _tangents(7, primals)
    out, tangent = jvp(fn, primals, tangents)
    cotangent = pb.tensor(np.random.default_rng(8).standard_normal(tuple(out.shape)))
    _, vjp_fn = vjp(fn, *primals)
    pulled = vjp_fn(cotangent)
    lhs = float((cotangent.numpy() * tangent.numpy()).sum())
    rhs = sum(float((p.numpy() * t.numpy()).sum()) for p, t in zip(pulled, tangents))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-12)


def test_jvp_of_spike_is_the_surrogate_derivative_and_transposes_its_vjp() -> None:
    rng = np.random.default_rng(9)
    u, thr = pb.tensor(rng.uniform(0, 2, (B, N))), pb.tensor(rng.uniform(0.8, 1.2, N))
    tu, tt = pb.tensor(rng.standard_normal((B, N))), pb.tensor(rng.standard_normal(N))
    _, tangent = jvp(spike, (u, thr), (tu, tt))
    slope = 4.0  # fast_sigmoid's derivative: 1 / (1 + slope |u - thr|)^2
    d = 1.0 / (1.0 + slope * np.abs(u.numpy() - thr.numpy())) ** 2
    np.testing.assert_allclose(tangent.numpy(), d * (tu.numpy() - tt.numpy()), rtol=1e-12)
    cotangent = pb.tensor(rng.standard_normal((B, N)))
    gu, gt = vjp(spike, u, thr)[1](cotangent)
    lhs = float((cotangent.numpy() * tangent.numpy()).sum())
    rhs = float((gu.numpy() * tu.numpy()).sum() + (gt.numpy() * tt.numpy()).sum())
    assert lhs == pytest.approx(rhs, rel=1e-12)


def _network():
    layer = spanda.SpikingLinear(6, 4, spanda.LIF(beta=0.8), dtype="float64")
    return layer


def test_per_sample_gradients_of_a_spiking_layer_match_a_loop() -> None:
    layer = _network()
    params = {k: v.detach() for k, v in layer.named_parameters()}
    rng = np.random.default_rng(10)
    inputs = rng.uniform(0, 1.5, (B, T, 6))  # per sample: (T, 6), one sample in the layer's B
    targets = rng.uniform(0, 1, (B, T, 4))

    def loss(p, x, y):
        spanda.reset_states(layer)
        _, membrane = functional_call(layer, p, (x.unsqueeze(1),), {"return_membrane": True})
        return ((membrane.squeeze(1) - y) ** 2).sum()

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, pb.tensor(inputs),
                                                        pb.tensor(targets))
    for i in range(B):
        spanda.reset_states(layer)
        layer.zero_grad()
        _, membrane = layer(pb.tensor(inputs[i][:, None]), return_membrane=True)
        ((membrane.squeeze(1) - pb.tensor(targets[i])) ** 2).sum().backward()
        for name, p in layer.named_parameters():
            np.testing.assert_allclose(per_sample[name].numpy()[i], p.grad.numpy(),
                                       rtol=1e-10, atol=1e-12)


def test_jvp_of_a_spiking_layer_matches_central_differences() -> None:
    layer = _network()
    params = {k: v.detach() for k, v in layer.named_parameters()}
    x = pb.tensor(np.random.default_rng(11).uniform(0, 1.5, (T, 2, 6)))

    def membrane(weight):
        spanda.reset_states(layer)
        return functional_call(layer, {**params, "synapse.weight": weight}, (x,),
                               {"return_membrane": True})[1]

    w = params["synapse.weight"]
    direction = pb.tensor(np.random.default_rng(12).standard_normal(tuple(w.shape)))
    out, tangent = jvp(membrane, (w,), (direction,))
    assert np.min(np.abs(out.numpy() - 1.0)) > 1e-4  # LIF's threshold: none within eps
    eps = 1e-6
    numeric = (membrane(pb.tensor(w.numpy() + eps * direction.numpy())).numpy()
               - membrane(pb.tensor(w.numpy() - eps * direction.numpy())).numpy()) / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_the_rules_come_from_spandas_plugin() -> None:
    from pullback.func._batch_rules import batch_rule
    from pullback.func._jvp_rules import jvp_rule
    from pullback.spanda._ops import transform_rules

    assert batch_rule(SPIKE) is transform_rules.spike_batch
    assert batch_rule(LEAKY) is transform_rules.leaky_batch
    assert jvp_rule(SPIKE) is transform_rules.spike_jvp
    assert jvp_rule(LEAKY) is transform_rules.leaky_jvp
