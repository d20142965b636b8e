"""The dispatch-mode hooks a tracer builds on: backward on Tensors, host reads, array updates,
and ops with several outputs."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb
from pullback.dispatch import (DispatchMode, apply, run_array_update, raw_namespace)
from pullback.registry import Op


class Recorder(DispatchMode):
    """Counts the ops it sees and what was read into Python."""

    def __init__(self, records_backward: bool = False) -> None:
        self.records_backward = records_backward
        self.ops: list[str] = []
        self.reads: list[str] = []

    def dispatch(self, op, args, attrs):
        self.ops.append(op.name)
        return apply(op, *args, **attrs)

    def on_host_read(self, tensor, what):
        self.reads.append(what)


def _loss_and_grads(x_value, mode=None):
    x = pb.tensor(x_value, requires_grad=True)
    w = pb.tensor([[0.5, -1.0], [2.0, 0.25]], dtype="float64", requires_grad=True)
    if mode is None:
        loss = (pb.tanh(x @ w) * x).sum()
        loss.backward()
    else:
        with mode:
            loss = (pb.tanh(x @ w) * x).sum()
            loss.backward()
    return x.grad, w.grad


def test_a_mode_that_records_backward_sees_its_ops_and_gets_the_same_gradients():
    value = np.array([[0.3, -0.7], [1.1, 0.2]])
    plain = _loss_and_grads(value)
    mode = Recorder(records_backward=True)
    traced = _loss_and_grads(value, mode)
    forward_ops = ["matmul", "tanh", "mul", "sum"]
    assert mode.ops[:4] == forward_ops
    # tanh's first-order rule is its backward op (not the differentiable composite)
    assert "tanh_backward" in mode.ops[4:]
    for a, b in zip(plain, traced):
        assert isinstance(b, pb.Tensor) and b.is_leaf and not b.requires_grad
        np.testing.assert_array_equal(a.array, b.array)


def test_a_mode_that_does_not_record_backward_sees_only_the_forward():
    mode = Recorder()
    _loss_and_grads(np.array([[0.3, -0.7], [1.1, 0.2]]), mode)
    assert mode.ops == ["matmul", "tanh", "mul", "sum"]


def test_recorded_backward_passes_the_forward_saved_values_as_tensors():
    seen = {}

    def kernel(xp):
        return lambda x: (x * 2.0, (x + 1.0,))

    op = Op("test.aux_double", kernel, aux=True)

    @op.def_grad
    def _grad(F, g, out, x, saved=None):
        seen["saved"] = saved
        return (g * 2.0,)

    x = pb.tensor([1.0, 2.0], requires_grad=True)
    with Recorder(records_backward=True):
        apply(op, x).sum().backward()
    (plus_one,) = seen["saved"]
    assert isinstance(plus_one, pb.Tensor)
    np.testing.assert_array_equal(plus_one.array, [2.0, 3.0])
    np.testing.assert_array_equal(x.grad.array, [2.0, 2.0])


def test_an_op_with_several_outputs_gives_a_tuple_of_tensors():
    op = Op("test.split_sign", lambda xp: lambda x: (xp.maximum(x, 0), None, xp.minimum(x, 0)),
            differentiable=False)
    x = pb.tensor([-1.0, 2.0])
    pos, missing, neg = apply(op, x)
    assert missing is None
    np.testing.assert_array_equal(pos.array, [0.0, 2.0])
    np.testing.assert_array_equal(neg.array, [-1.0, 0.0])
    assert not pos.requires_grad


@pytest.mark.parametrize("read, what", [
    (lambda t: t.item(), "item()"), (lambda t: bool(t), "bool()"),
    (lambda t: float(t), "float()"), (lambda t: int(t), "int()"),
    (lambda t: t.tolist(), "tolist()"), (lambda t: t.numpy(), "numpy()"),
    (lambda t: np.asarray(t), "__array__() (numpy.asarray)"),
])
def test_host_reads_are_reported_to_the_modes(read, what):
    t = pb.tensor([3.0])
    mode = Recorder()
    with mode:
        read(t)
    assert mode.reads[0] == what


def test_host_reads_without_a_mode_cost_nothing_and_work():
    assert pb.tensor([2.5]).item() == 2.5
    assert bool(pb.tensor(1.0))


def test_an_array_update_runs_with_the_backend_namespace_without_a_mode():
    a = np.zeros(3)
    run_array_update(lambda namespace_of: namespace_of(pb.device("cpu")).add(a, 1.0, out=a))
    np.testing.assert_array_equal(a, [1.0, 1.0, 1.0])


def test_a_mode_can_lend_its_own_namespace_to_an_array_update():
    calls = []

    class Lender(DispatchMode):
        def array_update(self, update):
            def namespace_of(device):
                calls.append(device.type)
                return device.backend.xp

            update(namespace_of)

    a = np.zeros(2)
    with Lender():
        run_array_update(lambda ns: ns(pb.device("cpu")).subtract(a, 2.0, out=a))
    assert calls == ["cpu"]
    np.testing.assert_array_equal(a, [-2.0, -2.0])


def test_an_array_update_reaches_the_modes_below_a_mode_that_passes_it_on():
    a = np.zeros(1)
    with Recorder():
        run_array_update(lambda ns: ns(pb.device("cpu")).add(a, 5.0, out=a))
    assert a[0] == 5.0


def test_raw_namespace_is_unchanged_by_the_first_order_tensor_namespace():
    assert raw_namespace("cpu").differentiable is False
    from pullback.dispatch import first_order_tensor_namespace, tensor_namespace

    assert first_order_tensor_namespace.differentiable is False
    assert tensor_namespace.differentiable is True


class WriteRecorder(DispatchMode):
    """Records the in-place writes outside any graph that it is told about."""

    def __init__(self) -> None:
        self.writes: list[tuple[pb.Tensor, object]] = []

    def on_write(self, tensor, value):
        self.writes.append((tensor, value))


@pytest.mark.parametrize("write, expected", [
    (lambda t: t.add_(2.0), [3.0, 4.0]),
    (lambda t: t.mul_(pb.tensor([2.0, 3.0])), [2.0, 6.0]),
    (lambda t: t.copy_(pb.tensor([5.0, 6.0])), [5.0, 6.0]),
    (lambda t: t.copy_(7.0), [7.0, 7.0]),
    (lambda t: t.fill_(0.5), [0.5, 0.5]),
])
def test_in_place_writes_outside_a_graph_are_reported_with_what_was_written(write, expected):
    t = pb.tensor([1.0, 2.0])
    mode = WriteRecorder()
    with mode, pb.no_grad():
        write(t)
    ((tensor, value),) = mode.writes
    assert tensor is t
    np.testing.assert_array_equal(t.array, expected)
    written = value.array if isinstance(value, pb.Tensor) else value
    np.testing.assert_array_equal(np.broadcast_to(written, t.shape), expected)


def test_a_recorded_in_place_op_is_not_a_write_outside_the_graph():
    w = pb.tensor([1.0, 2.0], requires_grad=True)
    t = pb.tensor([1.0, 1.0])
    mode = WriteRecorder()
    with mode:
        t.mul_(w)  # recorded: t is re-pointed at the product's node, as any op's output
    assert mode.writes == [] and t.requires_grad
