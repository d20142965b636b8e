"""Optimizer and scheduler state dicts from someone else's file (docs/security.md): a state
that would fail at the next ``step()`` (or that the loader itself would trip over) is one
CheckpointError at ``load_state_dict``, naming the group or parameter and the entry, and
nothing is half loaded."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import pullback
from pullback.errors import CheckpointError
from pullback.optim import LBFGS, OPTIMIZERS
from optim_resume_worker import start, train

STEPPED = sorted(n for n, c in OPTIMIZERS.items()
                 if c.supports_param_groups and not c.requires_closure)


def _trained(name: str = "adam") -> dict:
    params, opt, sched = start(name)
    train(params, opt, sched, 0, 2)
    return opt.state_dict()


def _refused(sd, name: str = "adam", *words: str) -> CheckpointError:
    params, opt, sched = start(name)
    train(params, opt, sched, 0, 2)
    before = copy.deepcopy({i: {k: (v.numpy().copy() if isinstance(v, pullback.Tensor) else v)
                                for k, v in s.items()}
                            for i, s in opt.state_dict()["state"].items()})
    groups_before = [dict(g) for g in opt.param_groups]
    with pytest.raises(CheckpointError) as caught:
        opt.load_state_dict(sd)
    for word in words:
        assert word in str(caught.value), str(caught.value)
    # nothing was half loaded: the optimizer keeps its state and steps on
    assert [dict(g) for g in opt.param_groups] == groups_before
    for i, s in opt.state_dict()["state"].items():
        for k, v in s.items():
            got = v.numpy() if isinstance(v, pullback.Tensor) else v
            np.testing.assert_array_equal(got, before[i][k])
    train(params, opt, sched, 2, 3)
    return caught.value


def _edit(edit, name: str = "adam"):
    sd = _trained(name)
    edit(sd)
    return sd


@pytest.mark.parametrize("edit, words", [
    (lambda sd: sd.update(state=[1, 2]), ["'state' must be a dict", "list"]),
    (lambda sd: sd.update(param_groups={"a": 1}), ["'param_groups' must be a list"]),
    (lambda sd: sd["param_groups"].__setitem__(0, 7), ["param group 0 must be a dict"]),
    (lambda sd: sd["param_groups"][0].update(params="01"), ["'params' must be a list"]),
    (lambda sd: sd["param_groups"][0].update(params=[0, True]), ["index True"]),
    (lambda sd: sd["param_groups"][1].update(params=[0, 1]), ["index 0 is listed twice"]),
    (lambda sd: sd["state"].__setitem__(0, [1.0]), ["state of parameter 0 must be a dict"]),
    (lambda sd: sd["state"].__setitem__(None, {}), ["index None"]),
    (lambda sd: sd["state"][0].update(step="abc"), ["parameter 0: 'step'", "non-negative"]),
    (lambda sd: sd["state"][0].update(step=-1), ["'step' must be a non-negative integer"]),
    (lambda sd: sd["state"][0].update(step=1.5), ["'step' must be a non-negative integer"]),
    (lambda sd: sd["state"][0].update(step=True), ["'step' must be a non-negative integer"]),
    (lambda sd: sd["state"][0].update(step=float("inf")), ["'step'"]),
    (lambda sd: sd["state"][1].update(exp_avg=[0.1] * 8), ["parameter 1: 'exp_avg'",
                                                          "must be a tensor", "list"]),
    (lambda sd: sd["state"][1].update(exp_avg="zeros"), ["'exp_avg' must be a tensor"]),
    (lambda sd: sd["state"][1].update(exp_avg=np.zeros(8, np.complex64)),
     ["'exp_avg' has dtype complex64"]),
    (lambda sd: sd["state"][1].update(exp_avg=pullback.zeros(8, dtype=pullback.bool)),
     ["'exp_avg' has dtype bool"]),
    (lambda sd: sd["state"][1].pop("exp_avg_sq"), ["parameter 1 lacks ['exp_avg_sq']"]),
    (lambda sd: sd["state"][1].update(notes="hi"), ["'notes' is not state that Adam keeps"]),
    (lambda sd: sd["param_groups"][0].update(lr="fast"), ["param group 0: 'lr'", "str"]),
    (lambda sd: sd["param_groups"][0].update(betas=[0.9]), ["'betas'", "2 items"]),
    (lambda sd: sd["param_groups"][0].update(betas=[0.9, 1.5]), ["invalid betas[1]: 1.5"]),
    (lambda sd: sd["param_groups"][0].update(amsgrad="yes"), ["'amsgrad'", "bool"]),
    (lambda sd: sd["param_groups"][0].update(eps=None), ["'eps'", "NoneType"]),
])
def test_a_crafted_adam_state_is_refused_at_load(edit, words):
    _refused(_edit(edit), "adam", *words)


def test_a_group_missing_a_setting_keeps_the_optimizers():
    # an older state dict without a newer option: PyTorch fills it in too
    sd = _trained()
    del sd["param_groups"][0]["maximize"]
    params, opt, sched = start("adam")
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["maximize"] is False
    train(params, opt, sched, 2, 3)


def test_an_empty_parameter_state_is_no_state():
    sd = _trained()
    sd["state"][0] = {}
    params, opt, sched = start("adam")
    opt.load_state_dict(sd)
    assert params["w1"] not in opt.state
    train(params, opt, sched, 2, 3)
    assert opt.state[params["w1"]]["step"] == 1


def test_sgd_momentum_buffer_must_be_a_parameter_shaped_tensor():
    _refused(_edit(lambda sd: sd["state"][0].update(momentum_buffer=[0.0]), "sgd"), "sgd",
             "'momentum_buffer' is not state that SGD keeps")
    _refused(_edit(lambda sd: sd["state"][0].update(momentum_buffer=pullback.zeros(2)), "sgd"),
             "sgd", "'momentum_buffer' has shape (2,)")


@pytest.mark.parametrize("name", STEPPED)
def test_every_optimizer_refuses_a_moment_that_is_a_list_and_a_step_that_is_text(name):
    sd = _trained(name)
    state = sd["state"][0]
    tensors = [k for k, v in state.items() if isinstance(v, pullback.Tensor)]
    counts = [k for k, v in state.items() if type(v) is int]
    assert tensors, state
    broken = copy.deepcopy(sd)
    broken["state"][0][tensors[0]] = state[tensors[0]].tolist()
    _refused(broken, name, f"'{tensors[0]}'")
    for key in counts:
        broken = copy.deepcopy(sd)
        broken["state"][0][key] = "abc"
        _refused(broken, name, f"'{key}'")


@pytest.mark.parametrize("name", STEPPED)
def test_every_optimizer_still_loads_its_own_state_through_a_file(name, tmp_path):
    params, opt, sched = start(name)
    train(params, opt, sched, 0, 3)
    pullback.save(opt.state_dict(), tmp_path / "opt.safetensors")
    params2, opt2, sched2 = start(name)
    opt2.load_state_dict(pullback.load(tmp_path / "opt.safetensors"))
    for p, p2 in zip(params.values(), params2.values()):
        for key, value in opt.state[p].items():
            got = opt2.state[p2][key]
            if isinstance(value, pullback.Tensor):
                np.testing.assert_array_equal(got.numpy(), value.numpy())
            else:
                assert got == value and type(got) is type(value), key


def _lbfgs_state():
    w = pullback.tensor([3.0, -2.0], requires_grad=True, dtype=pullback.float64)
    b = pullback.tensor([[0.5]], requires_grad=True, dtype=pullback.float64)
    opt = LBFGS([w, b], max_iter=3, history_size=4)

    def closure():
        opt.zero_grad()
        loss = ((w - 1.0) ** 4).sum() + (b ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return opt, closure


def test_lbfgs_with_several_parameters_resumes_through_a_file(tmp_path):
    opt, closure = _lbfgs_state()
    pullback.save(opt.state_dict(), tmp_path / "lbfgs.safetensors")
    w2 = pullback.tensor([3.0, -2.0], requires_grad=True, dtype=pullback.float64)
    b2 = pullback.tensor([[0.5]], requires_grad=True, dtype=pullback.float64)
    opt2 = LBFGS([w2, b2], max_iter=3, history_size=4)
    opt2.load_state_dict(pullback.load(tmp_path / "lbfgs.safetensors"))
    state, state2 = opt.state[opt._params[0]], opt2.state[w2]
    assert state2.keys() == state.keys()
    np.testing.assert_array_equal(state2["d"].numpy(), state["d"].numpy())
    assert len(state2["old_dirs"]) == len(state["old_dirs"])


@pytest.mark.parametrize("edit, words", [
    (lambda s: s.update(d=pullback.zeros(2, dtype=pullback.float64)), "'d' has shape (2,)"),
    (lambda s: s.update(old_dirs=5), "must be lists of as many entries"),
    (lambda s: s.update(ro=s["ro"] + [1.0]), "must be lists of as many entries"),
    (lambda s: s.update(t="x"), "'t' must be a real number"),
    (lambda s: s.update(n_iter=-2), "'n_iter' must be a non-negative integer"),
    (lambda s: s.pop("H_diag"), "after a step, all of"),
    (lambda s: s.update(extra=1), "got ['H_diag'"),
])
def test_lbfgs_refuses_a_crafted_history(edit, words):
    opt, closure = _lbfgs_state()
    sd = opt.state_dict()
    edit(sd["state"][0])
    fresh, _ = _lbfgs_state()
    before = dict(fresh.state[fresh._params[0]])
    with pytest.raises(CheckpointError, match=None) as caught:
        fresh.load_state_dict(sd)
    assert words in str(caught.value), str(caught.value)
    assert fresh.state[fresh._params[0]].keys() == before.keys()


def test_a_scheduler_state_of_the_wrong_kinds_is_refused():
    params, opt, sched = start("adam")
    train(params, opt, sched, 0, 2)
    good = sched.state_dict()
    for key, value, words in [("last_epoch", "abc", "'last_epoch' holds str"),
                              ("base_lrs", [0.1], "'base_lrs' holds list"),
                              ("base_lrs", [0.1, "x"], "'base_lrs'[1] holds str"),
                              ("_is_initial", 0, "'_is_initial' holds int")]:
        bad = dict(good, **{key: value})
        with pytest.raises(CheckpointError, match="load_state_dict") as caught:
            sched.load_state_dict(bad)
        assert words in str(caught.value), str(caught.value)
    sched.load_state_dict(good)
    train(params, opt, sched, 2, 3)
