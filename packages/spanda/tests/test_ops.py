"""The two fused ops: registration through the plugin, the leaky op's gradients (gradcheck where
the reset is detached, so the gradient is the true one; against the same recurrence built from
core ops and the spike op where the reset carries the surrogate), second derivatives, and one
op over a sequence against a step-by-step loop."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import plugins, spanda
from pullback.dispatch import apply
from pullback.registry import OP_OWNERS, OPS
from pullback.spanda._ops.leaky import FORMS, IMMEDIATE_FORMS, LEAKY
from pullback.spanda._ops.spike import SPIKE
from pullback.testing import gradcheck, gradgradcheck

T, B, N = 6, 2, 3
SG = spanda.surrogate.fast_sigmoid(slope=4.0)  # gentle, so that finite differences see it


def test_the_plugin_registers_both_ops() -> None:
    assert OPS["spanda.spike"] is SPIKE
    assert OPS["spanda.leaky"] is LEAKY
    assert OP_OWNERS["spanda.leaky"] == OP_OWNERS["spanda.spike"] == "pullback-spanda"
    record = plugins.records()["spanda"]
    assert record.distribution == "pullback-spanda"
    assert "spanda.spike" in str(record.registered) and "spanda.leaky" in str(record.registered)


def _data(seed: int) -> tuple[pullback.Tensor, ...]:
    rng = np.random.default_rng(seed)
    x = pullback.tensor(rng.uniform(-0.5, 1.5, (T, B, N)), requires_grad=True)
    u0 = pullback.tensor(rng.uniform(-0.5, 1.5, (B, N)), requires_grad=True)
    beta = pullback.tensor(rng.uniform(0.5, 0.9, N), requires_grad=True)
    thr = pullback.tensor(rng.uniform(0.8, 1.2, N), requires_grad=True)
    return x, u0, beta, thr


def _leaky(form: str, detach: bool, sequence: bool = True):
    def run(x, u0, beta, thr):
        return apply(LEAKY, x, u0, beta, thr, reset=form, detach_reset=detach, surrogate=SG,
                     sequence=sequence)
    return run


@pytest.mark.parametrize("form", FORMS)
def test_detached_reset_gradients_pass_gradcheck(form: str) -> None:
    inputs = _data(0)
    out = _leaky(form, True)(*inputs)
    u = out.detach().numpy()
    assert np.min(np.abs(u - inputs[3].detach().numpy())) > 1e-4  # no threshold within eps
    assert gradcheck(_leaky(form, True), inputs)
    assert gradcheck(_leaky(form, True, sequence=False), (inputs[0][0],) + inputs[1:])


@pytest.mark.parametrize("form", FORMS)
def test_second_derivatives_pass_gradgradcheck(form: str) -> None:
    # Detached only: with the surrogate in the reset the first derivative is not the forward's
    # true one, so finite differences of it cannot check its own derivative.
    x, u0, beta, thr = _data(1)
    assert gradgradcheck(_leaky(form, True), (x[:3], u0, beta, thr))


def _composite(form: str, detach: bool, x, u0, beta, thr):
    """The recurrence of ``form`` from core ops and ``spanda.spike``, one step at a time (the
    table in pullback.spanda._ops.leaky, written out)."""
    b = beta.clamp(0.0, 1.0)
    prev, outs = u0, []
    for t in range(x.shape[0]):
        s = spanda.functional.spike(prev, thr, surrogate=SG)
        if detach:
            s = s.detach()
        if form in IMMEDIATE_FORMS and t == 0:
            s = s * 0.0
        if form == "subtract":
            u = b * prev + x[t] - thr * s
        elif form == "subtract_immediate":
            u = b * (prev - thr * s) + x[t]
        elif form in ("zero", "zero_immediate"):
            u = b * (1.0 - s) * prev + x[t]
        elif form == "zero_input":
            u = (1.0 - s) * (b * prev + x[t])
        else:
            u = b * prev + x[t]
        outs.append(u)
        prev = u
    return pullback.stack(outs)


@pytest.mark.parametrize("detach", [True, False], ids=["detached", "surrogate_reset"])
@pytest.mark.parametrize("form", FORMS)
def test_fused_op_matches_the_composite_recurrence(form: str, detach: bool) -> None:
    ours_in, ref_in = _data(2), _data(2)
    ours = _leaky(form, detach)(*ours_in)
    ref = _composite(form, detach, *ref_in)
    w = pullback.tensor(np.random.default_rng(3).standard_normal((T, B, N)))
    (ours * w).sum().backward()
    (ref * w).sum().backward()
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-14,
                               atol=1e-14)
    for name, a, b in zip(["x", "u0", "beta", "threshold"], ours_in, ref_in):
        if b.grad is None:  # the reference does not reach it (a detached zero reset's threshold)
            assert a.grad is None, name
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-13,
                                   err_msg=name)


@pytest.mark.parametrize("reset", ["subtract", "zero", "none"])
@pytest.mark.parametrize("delay", [True, False])
def test_one_sequence_call_equals_a_loop_of_steps(reset: str, delay: bool) -> None:
    rng = np.random.default_rng(4)
    x_np = rng.uniform(-0.5, 1.5, (T, B, N))
    options = dict(beta=0.8, reset_mechanism=reset, reset_delay=delay, surrogate="triangle")
    xs = pullback.tensor(x_np, requires_grad=True)
    spk_seq, mem_seq = spanda.functional.lif_sequence(xs, **options)
    (spk_seq.sum() + (mem_seq * mem_seq).sum()).backward()

    xl = pullback.tensor(x_np, requires_grad=True)
    mem, spikes, mems = None, [], []
    for t in range(T):
        spk, mem = spanda.functional.lif(xl[t], mem, **options)
        spikes.append(spk)
        mems.append(mem)
    (pullback.stack(spikes).sum() + (pullback.stack(mems) ** 2).sum()).backward()
    np.testing.assert_array_equal(spk_seq.detach().numpy(), pullback.stack(spikes).detach().numpy())
    np.testing.assert_array_equal(mem_seq.detach().numpy(), pullback.stack(mems).detach().numpy())
    np.testing.assert_allclose(xs.grad.numpy(), xl.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_float32_currents_stay_float32_with_float64_constants() -> None:
    x = pullback.ones(T, B, N, dtype=pullback.float32)
    beta = pullback.tensor(0.5, dtype=pullback.float64)
    spk, mem = spanda.functional.lif_sequence(x, beta=beta, threshold=pullback.tensor(1.0))
    assert spk.dtype == mem.dtype == np.float32


def test_the_immediate_reset_never_resets_twice() -> None:
    """Where snnTorch's reset_delay=False differs: a reset membrane still above the threshold.

    Threshold 1, beta 1, input 2.5 then 0: the first step fires and resets to 1.5; the second
    reads 1.5, fires again and resets to 0.5. snnTorch would reset the carried 1.5 a second time
    before integrating (1.5 - 1 = 0.5, below the threshold: no spike, membrane 0.5 after its
    'do_reset' correction), so its second spike is missing.
    """
    x = pullback.tensor([[2.5], [0.0]])
    spk, mem = spanda.functional.lif_sequence(x, beta=1.0, reset_delay=False)
    assert spk.tolist() == [[1.0], [1.0]]
    assert mem.tolist() == [[1.5], [0.5]]
