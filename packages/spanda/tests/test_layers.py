"""Spiking layers and SpikingSequential against the usual snnTorch loop (one call per step
through ``nn.Linear``/``nn.Conv2d`` and ``snn.Leaky``), with the same weights in float64:
outputs and every parameter's gradient, for static (direct) and time-varying inputs, with
truncated BPTT, and for convolutional, synaptic and recurrent layers."""

from __future__ import annotations

import numpy as np
import pytest

import pullback
from pullback import nn, spanda
from pullback.errors import ShapeError

torch = pytest.importorskip("torch")
snn = pytest.importorskip("snntorch")

T, B = 10, 4


def _load(ours: nn.Module, theirs: "torch.nn.Module") -> None:
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def _mlp_pair(spike_grad, beta: float = 0.875, neuron: str = "lif"):
    """20-16-5 in both: pullback's SpikingLinear + Linear + bare neuron; snnTorch's Linear +
    neuron, twice (arctan, snnTorch's default, in float64)."""
    sg = spike_grad["arctan"]()
    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(20, 16).double(), torch.nn.Linear(16, 5).double()
    with torch.no_grad():
        fc1.weight.mul_(3.0)  # enough current to spike
    if neuron == "lif":
        t1 = snn.Leaky(beta=torch.tensor(beta, dtype=torch.float64), spike_grad=sg)
        t2 = snn.Leaky(beta=torch.tensor(beta, dtype=torch.float64), spike_grad=sg)
        o1, o2 = spanda.LIF(np.float64(beta)), spanda.LIF(np.float64(beta))
    else:
        t1 = snn.Synaptic(alpha=torch.tensor(0.5, dtype=torch.float64),
                          beta=torch.tensor(beta, dtype=torch.float64), spike_grad=sg)
        t2 = snn.Synaptic(alpha=torch.tensor(0.5, dtype=torch.float64),
                          beta=torch.tensor(beta, dtype=torch.float64), spike_grad=sg)
        o1 = spanda.Synaptic(np.float64(0.5), np.float64(beta))
        o2 = spanda.Synaptic(np.float64(0.5), np.float64(beta))
    ours = spanda.SpikingSequential(spanda.SpikingLinear(20, 16, o1), nn.Linear(16, 5), o2)
    ours.double()
    _load(ours[0].synapse, fc1)
    _load(ours[1], fc2)

    def theirs(x_steps, window=None):
        """snnTorch's tutorial loop; ``window``: detach the state every so many steps."""
        state1, state2, spikes, mems = [], [], [], []
        for t in range(len(x_steps)):
            if window and t and t % window == 0:
                state1 = [s.detach() for s in state1]
                state2 = [s.detach() for s in state2]
            out1 = t1(fc1(x_steps[t]), *state1)
            state1 = list(out1[1:])
            out2 = t2(fc2(out1[0]), *state2)
            state2 = list(out2[1:])
            spikes.append(out2[0])
            mems.append(out2[-1])
        return torch.stack(spikes), torch.stack(mems)

    return ours, theirs, (fc1, fc2)


def _compare_gradients(ours: nn.Module, linears) -> None:
    fc1, fc2 = linears
    pairs = [(ours[0].synapse.weight, fc1.weight), (ours[0].synapse.bias, fc1.bias),
             (ours[1].weight, fc2.weight), (ours[1].bias, fc2.bias)]
    for a, b in pairs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("neuron", ["lif", "synaptic"])
@pytest.mark.parametrize("encoding", ["direct", "rate"])
def test_a_two_layer_snn_matches_the_snntorch_loop(encoding: str, neuron: str,
                                                   snn_spike_grad) -> None:
    ours, theirs, linears = _mlp_pair(snn_spike_grad, neuron=neuron)
    rng = np.random.default_rng(0)
    images = rng.random((B, 20))
    if encoding == "direct":
        x = spanda.encode.direct(pullback.tensor(images), T)
        tx = [torch.tensor(images)] * T
    else:
        x = spanda.encode.rate(pullback.tensor(images), T, generator=0)
        tx = list(torch.tensor(x.detach().numpy()))
    spikes, mem = ours(x, num_steps=T, return_membrane=True)
    t_spikes, t_mem = theirs(tx)
    w = rng.standard_normal((T, B, 5))
    ((spikes * pullback.tensor(w)).sum() + (mem * pullback.tensor(w)).sum()).backward()
    ((t_spikes * torch.tensor(w)).sum() + (t_mem * torch.tensor(w)).sum()).backward()
    assert t_spikes.sum() > 0
    np.testing.assert_array_equal(spikes.detach().numpy(), t_spikes.detach().numpy())
    np.testing.assert_allclose(mem.detach().numpy(), t_mem.detach().numpy(), rtol=1e-12,
                               atol=1e-13)
    _compare_gradients(ours, linears)


def test_tbptt_matches_snntorch_with_the_state_detached_every_window(snn_spike_grad) -> None:
    ours, theirs, linears = _mlp_pair(snn_spike_grad)
    images = np.random.default_rng(1).random((B, 20))
    x = spanda.encode.direct(pullback.tensor(images), T)
    full = ours(x, num_steps=T)
    spikes = ours(x, num_steps=T, tbptt=4)
    np.testing.assert_array_equal(spikes.detach().numpy(), full.detach().numpy())
    t_spikes, _ = theirs([torch.tensor(images)] * T, window=4)
    (spikes * pullback.arange(T, dtype=pullback.float64).reshape(T, 1, 1)).sum().backward()
    (t_spikes * torch.arange(T, dtype=torch.float64).reshape(T, 1, 1)).sum().backward()
    _compare_gradients(ours, linears)


def test_spiking_conv2d_matches_snntorch(snn_spike_grad) -> None:
    torch.manual_seed(1)
    sg = snn_spike_grad["arctan"]()
    conv = torch.nn.Conv2d(1, 3, 3, padding=1).double()
    fc = torch.nn.Linear(3 * 3 * 3, 4).double()
    t_lif1 = snn.Leaky(beta=torch.tensor(0.75, dtype=torch.float64), spike_grad=sg)
    t_lif2 = snn.Leaky(beta=torch.tensor(0.75, dtype=torch.float64), spike_grad=sg)
    ours = spanda.SpikingSequential(
        spanda.SpikingConv2d(1, 3, 3, padding=1, neuron=spanda.LIF(np.float64(0.75))),
        nn.MaxPool2d(2), nn.Flatten(), spanda.SpikingLinear(27, 4, spanda.LIF(np.float64(0.75))))
    ours.double()
    _load(ours[0].synapse, conv)
    _load(ours[3].synapse, fc)
    x_np = np.random.default_rng(2).uniform(0, 3, (T, B, 1, 6, 6))
    spikes = ours(pullback.tensor(x_np))
    out, m1, m2 = [], None, None
    for t in range(T):
        s1, m1 = t_lif1(conv(torch.tensor(x_np[t])), m1)
        s2, m2 = t_lif2(fc(torch.nn.functional.max_pool2d(s1, 2).flatten(1)), m2)
        out.append(s2)
    t_spikes = torch.stack(out)
    spikes.sum().backward()
    t_spikes.sum().backward()
    assert t_spikes.sum() > 0
    np.testing.assert_array_equal(spikes.detach().numpy(), t_spikes.detach().numpy())
    np.testing.assert_allclose(ours[0].synapse.weight.grad.numpy(), conv.weight.grad.numpy(),
                               rtol=1e-9, atol=1e-12)


def test_rleaky_in_a_sequential_runs_step_by_step_like_its_own_loop() -> None:
    neuron = spanda.RLeaky(0.9, linear_features=6)
    model = spanda.SpikingSequential(nn.Linear(5, 6), neuron)
    x = pullback.rand(T, B, 5) * 3
    spikes = model(x)
    neuron.reset_state()
    steps = [neuron(model[0](x[t]))[0] for t in range(T)]
    np.testing.assert_array_equal(spikes.detach().numpy(), pullback.stack(steps).detach().numpy())


def test_a_constant_input_is_computed_once_and_gives_the_same_result() -> None:
    layer = spanda.SpikingLinear(7, 3, spanda.LIF(0.9))
    data = pullback.rand(B, 7) * 2
    x_view = spanda.encode.direct(data, T)
    assert x_view.array.strides[0] == 0
    x_copy = x_view.clone()
    assert x_copy.array.strides[0] != 0
    layer.neuron.reset_state()
    a = layer(x_view)
    layer.neuron.reset_state()
    b = layer(x_copy)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())


def test_time_axis_and_option_errors_name_the_problem() -> None:
    model = spanda.SpikingSequential(spanda.SpikingLinear(4, 3))
    x = pullback.rand(20, 2, 4)
    with pytest.raises(ShapeError, match=r"SpikingSequential: inputs have 20 time steps \(shape "
                                         r"\(20, 2, 4\), time first\) but num_steps=25"):
        model(x, num_steps=25)
    with pytest.raises(ValueError, match="tbptt must be a positive int"):
        model(x, tbptt=0)
    with pytest.raises(ValueError, match="num_steps must be a positive int"):
        model(x, num_steps=0)
    with pytest.raises(ValueError, match="return_membrane needs a neuron or a spiking layer last"):
        spanda.SpikingSequential(spanda.SpikingLinear(4, 3), nn.Linear(3, 2))(
            x, return_membrane=True)
