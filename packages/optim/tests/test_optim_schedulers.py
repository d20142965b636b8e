"""Every registered scheduler against PyTorch's: the learning rates (and cycled momenta) of two
param groups over 100 steps, including chains of schedulers on one optimizer; and every
scheduler's state dict, through JSON, resumes the same sequence.

pullback's schedulers take PyTorch's arguments, so each case below builds the same schedule
from either library: ``build(lib, optimizer)`` with ``lib`` either ``pullback.optim`` or
``torch.optim``.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable

import pytest

import pullback
import pullback.optim
from pullback.optim.lr_scheduler import SCHEDULERS

torch = pytest.importorskip("torch", reason="PyTorch is the oracle of these tests")

STEPS = 100
# a metric with descents, plateaus and noise, for ReduceLROnPlateau
METRIC = [1.0 - 0.02 * k for k in range(15)] + [0.72] * 12 + [0.7 - 0.001 * k for k in range(10)] \
    + [0.69 + 0.01 * math.sin(k) for k in range(63)]


def lib_of(opt: Any) -> Any:
    return torch.optim if isinstance(opt, torch.optim.Optimizer) else pullback.optim


Builder = Callable[[Any, Any], Any]
# (the registry name it covers, optimizer kind, builder)
CASES: dict[str, tuple[str, str, Builder]] = {
    "lambda": ("lambda", "sgd", lambda L, o: L.lr_scheduler.LambdaLR(o, lambda e: 0.97**e)),
    "lambda-per-group": ("lambda", "sgd", lambda L, o: L.lr_scheduler.LambdaLR(
        o, [lambda e: 0.97**e, lambda e: 1 / (1 + 0.1 * e)])),
    "step": ("step", "sgd", lambda L, o: L.lr_scheduler.StepLR(o, step_size=7, gamma=0.5)),
    "multi_step": ("multi_step", "sgd", lambda L, o: L.lr_scheduler.MultiStepLR(
        o, milestones=[10, 30, 30, 60], gamma=0.3)),
    "exponential": ("exponential", "sgd", lambda L, o: L.lr_scheduler.ExponentialLR(o, 0.97)),
    "linear": ("linear", "sgd", lambda L, o: L.lr_scheduler.LinearLR(
        o, start_factor=0.1, end_factor=0.9, total_iters=40)),
    "cosine_annealing": ("cosine_annealing", "sgd", lambda L, o: L.lr_scheduler.CosineAnnealingLR(
        o, T_max=30, eta_min=0.001)),
    "one_cycle-sgd": ("one_cycle", "sgd", lambda L, o: L.lr_scheduler.OneCycleLR(
        o, max_lr=[0.5, 0.2], total_steps=STEPS)),
    "one_cycle-adam-linear-3phase": ("one_cycle", "adam", lambda L, o: L.lr_scheduler.OneCycleLR(
        o, max_lr=0.3, epochs=10, steps_per_epoch=10, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, base_momentum=0.8, max_momentum=0.9)),
    "reduce_on_plateau": ("reduce_on_plateau", "sgd", lambda L, o: L.lr_scheduler.ReduceLROnPlateau(
        o, factor=0.5, patience=3, cooldown=2, min_lr=[0.01, 0.002])),
    "reduce_on_plateau-max-abs": ("reduce_on_plateau", "sgd",
                                  lambda L, o: L.lr_scheduler.ReduceLROnPlateau(
                                      o, mode="max", factor=0.7, patience=2, threshold=0.01,
                                      threshold_mode="abs")),
    "sequential": ("sequential", "sgd", lambda L, o: L.lr_scheduler.SequentialLR(o, [
        L.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=10),
        L.lr_scheduler.ExponentialLR(o, gamma=0.95),
        L.lr_scheduler.StepLR(o, step_size=5, gamma=0.5)], milestones=[10, 50])),
    "chained": ("chained", "sgd", lambda L, o: L.lr_scheduler.ChainedScheduler([
        L.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=10),
        L.lr_scheduler.ExponentialLR(o, gamma=0.98)])),
    "chained-cosine-multistep": ("chained", "sgd", lambda L, o: L.lr_scheduler.ChainedScheduler([
        L.lr_scheduler.CosineAnnealingLR(o, T_max=20),
        L.lr_scheduler.MultiStepLR(o, milestones=[25, 70], gamma=0.5)])),
}


def make_optimizer(lib: Any, kind: str) -> Any:
    """Two param groups with different learning rates."""
    if lib is torch.optim:
        a, b = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
    else:
        a, b = pullback.zeros(3, requires_grad=True), pullback.zeros(2, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if kind == "adam":
        return lib.Adam(groups, lr=0.1)
    return lib.SGD(groups, lr=0.1, momentum=0.9)


def schedule(scheds: list[Any], opt: Any, steps: int = STEPS, start: int = 0) -> list[tuple]:
    """What the optimizer sees at each step: every group's lr and momentum (or beta1), and
    what the last scheduler reports."""
    seen = []
    for step in range(start, start + steps):
        seen.append((
            tuple(g["lr"] for g in opt.param_groups),
            tuple(g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups),
            tuple(scheds[-1].get_last_lr()),
        ))
        opt.step()
        for s in scheds:
            if type(s).__name__ == "ReduceLROnPlateau":
                s.step(METRIC[step])
            else:
                s.step()
    return seen


def assert_close(ours: list[tuple], theirs: list[tuple], rel: float = 1e-12) -> None:
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for x, y in zip(a, b):
            assert x == pytest.approx(y, rel=rel, abs=1e-15), f"step {step}: {a} != {b}"
    assert len(ours) == len(theirs)


def test_every_registered_scheduler_has_a_case():
    assert {registered for registered, _, _ in CASES.values()} == set(SCHEDULERS)


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_pytorch(case: str):
    _, kind, build = CASES[case]
    ours_opt, torch_opt = make_optimizer(pullback.optim, kind), make_optimizer(torch.optim, kind)
    ours = schedule([build(pullback.optim, ours_opt)], ours_opt)
    theirs = schedule([build(torch.optim, torch_opt)], torch_opt)
    assert len({lrs for lrs, _, _ in theirs}) > 3, "the schedule hardly changes: a weak test"
    assert_close(ours, theirs)


CHAINS: dict[str, Callable[[Any, Any], list[Any]]] = {
    "step+exponential": lambda L, o: [L.lr_scheduler.StepLR(o, 10, 0.5),
                                      L.lr_scheduler.ExponentialLR(o, 0.99)],
    "linear+cosine": lambda L, o: [L.lr_scheduler.LinearLR(o, 0.25, total_iters=20),
                                   L.lr_scheduler.CosineAnnealingLR(o, T_max=40, eta_min=0.01)],
    "multistep+plateau": lambda L, o: [L.lr_scheduler.MultiStepLR(o, [20, 40]),
                                       L.lr_scheduler.ReduceLROnPlateau(o, patience=4)],
}


@pytest.mark.parametrize("chain", sorted(CHAINS))
def test_schedulers_chained_on_one_optimizer_match_pytorch(chain: str):
    ours_opt, torch_opt = make_optimizer(pullback.optim, "sgd"), make_optimizer(torch.optim, "sgd")
    ours = schedule(CHAINS[chain](pullback.optim, ours_opt), ours_opt)
    theirs = schedule(CHAINS[chain](torch.optim, torch_opt), torch_opt)
    assert_close(ours, theirs)


@pytest.mark.parametrize("warmup,total", [(10, 70), (1, 30), (0, 50)])
def test_warmup_cosine_is_linear_warmup_then_cosine_then_the_floor(warmup: int, total: int):
    min_lr = 0.004
    ours_opt, torch_opt = make_optimizer(pullback.optim, "sgd"), make_optimizer(torch.optim, "sgd")
    ours = schedule([pullback.optim.lr_scheduler.warmup_cosine(ours_opt, warmup, total, min_lr)],
                    ours_opt)
    L = torch.optim.lr_scheduler
    cosine = L.CosineAnnealingLR(torch_opt, T_max=total - warmup, eta_min=min_lr)
    if warmup > 1:
        linear = L.LinearLR(torch_opt, start_factor=1 / warmup, total_iters=warmup - 1)
        oracle = L.SequentialLR(torch_opt, [linear, cosine], milestones=[warmup])
    elif warmup == 1:  # LinearLR cannot ramp over 0 steps: one step at the full rate first
        oracle = L.SequentialLR(torch_opt, [L.ConstantLR(torch_opt, factor=1.0, total_iters=1),
                                            cosine], milestones=[warmup])
    else:
        oracle = cosine
    theirs = schedule([oracle], torch_opt, steps=total + 1)
    assert_close([lrs for lrs, _, _ in ours[:total + 1]], [lrs for lrs, _, _ in theirs], rel=1e-9)
    assert all(lrs == (min_lr, min_lr) for lrs, _, _ in ours[total:])  # the floor, not back up
    if warmup:
        assert ours[0][0] == pytest.approx((0.1 / warmup, 0.05 / warmup), rel=1e-12)



def torch_warmup_stable_decay(opt: Any, warmup: int, total: int, decay: int, min_lr: float,
                              shape: str) -> Any:
    """The WSD schedule from PyTorch's own schedulers: LinearLR up, ConstantLR at the peak,
    then LinearLR or CosineAnnealingLR down to ``min_lr`` (group 0's rate is 0.1)."""
    L = torch.optim.lr_scheduler
    parts, milestones = [], []
    if warmup:
        parts.append(L.LinearLR(opt, start_factor=1 / warmup, total_iters=warmup - 1))
        milestones.append(warmup)
    parts.append(L.ConstantLR(opt, factor=1.0, total_iters=0))
    milestones.append(total - decay)
    if shape == "linear":
        parts.append(L.LinearLR(opt, start_factor=1.0, end_factor=min_lr / 0.1,
                                total_iters=decay))
    else:
        parts.append(L.CosineAnnealingLR(opt, T_max=decay, eta_min=min_lr))
    return L.SequentialLR(opt, parts, milestones=milestones)


@pytest.mark.parametrize("shape", ["linear", "cosine"])
@pytest.mark.parametrize("warmup,total,decay", [(10, 70, 14), (0, 50, 50), (5, 40, 35)])
def test_warmup_stable_decay_matches_pytorch_sequential(shape: str, warmup: int, total: int,
                                                         decay: int):
    min_lr = 0.004
    ours_opt, torch_opt = make_optimizer(pullback.optim, "sgd"), make_optimizer(torch.optim, "sgd")
    ours = schedule([pullback.optim.lr_scheduler.warmup_stable_decay(
        ours_opt, warmup, total, decay, min_lr, shape)], ours_opt, steps=total + 5)
    theirs = schedule([torch_warmup_stable_decay(torch_opt, warmup, total, decay, min_lr, shape)],
                      torch_opt, steps=total + 1)
    # group 0 only: PyTorch's LinearLR takes one end_factor for every group, and the floor is
    # a different factor of each group's rate
    assert_close([(lrs[0],) for lrs, _, _ in ours[:total + 1]],
                 [(lrs[0],) for lrs, _, _ in theirs], rel=1e-9)
    assert all(lrs == (min_lr, min_lr) for lrs, _, _ in ours[total:])  # held at the floor
    assert [lrs for lrs, _, _ in ours[warmup:total - decay + 1]] == [(0.1, 0.05)] * (
        total - decay - warmup + 1)  # the stable phase is the peak in every group


def test_warmup_stable_decay_one_minus_sqrt_shape():
    opt = make_optimizer(pullback.optim, "sgd")
    lrs = [lr for (lr, _), _, _ in schedule([pullback.optim.lr_scheduler.warmup_stable_decay(
        opt, 0, 100, 64, min_lr=0.02, shape="1-sqrt")], opt, steps=101)]
    # decay from step 36: progress 1/4 leaves half of (0.1 - 0.02), progress 9/16 a quarter
    assert lrs[36] == pytest.approx(0.1)
    assert lrs[36 + 16] == pytest.approx(0.02 + 0.08 * 0.5)
    assert lrs[36 + 36] == pytest.approx(0.02 + 0.08 * 0.25)
    assert lrs[100] == pytest.approx(0.02)

@pytest.mark.parametrize("case", sorted(CASES))
def test_state_dict_through_json_resumes_the_same_schedule(case: str):
    _, kind, build = CASES[case]
    opt = make_optimizer(pullback.optim, kind)
    sched = build(pullback.optim, opt)
    straight = schedule([sched], opt)

    opt = make_optimizer(pullback.optim, kind)
    sched = build(pullback.optim, opt)
    first = schedule([sched], opt, steps=37)
    saved = json.loads(json.dumps({"scheduler": sched.state_dict(),
                                   "groups": opt.state_dict()["param_groups"]}))
    opt2 = make_optimizer(pullback.optim, kind)
    sched2 = build(pullback.optim, opt2)  # built first: building sets the lr, loading restores it
    opt2.load_state_dict({"state": {}, "param_groups": saved["groups"]})
    sched2.load_state_dict(saved["scheduler"])
    rest = schedule([sched2], opt2, steps=STEPS - 37, start=37)
    assert first + rest == straight


def test_warmup_cosine_state_dict_holds_its_factors():
    opt = make_optimizer(pullback.optim, "sgd")
    sched = pullback.optim.lr_scheduler.warmup_cosine(opt, 5, 50, min_lr=0.01)
    state = json.loads(json.dumps(sched.state_dict()))
    assert state["lr_lambdas"][0] == {"warmup_steps": 5, "total_steps": 50,
                                      "floor": pytest.approx(0.01 / 0.1)}
    assert state["lr_lambdas"][1] == {"warmup_steps": 5, "total_steps": 50,
                                      "floor": pytest.approx(0.01 / 0.05)}


def test_warmup_stable_decay_state_dict_resumes_the_same_schedule():
    def build(opt: Any) -> Any:
        return pullback.optim.lr_scheduler.warmup_stable_decay(opt, 5, 60, 20, min_lr=0.01,
                                                               shape="1-sqrt")

    opt = make_optimizer(pullback.optim, "sgd")
    straight = schedule([build(opt)], opt, steps=70)
    opt = make_optimizer(pullback.optim, "sgd")
    sched = build(opt)
    first = schedule([sched], opt, steps=45)
    saved = json.loads(json.dumps({"scheduler": sched.state_dict(),
                                   "groups": opt.state_dict()["param_groups"]}))
    assert saved["scheduler"]["lr_lambdas"][1] == {
        "warmup_steps": 5, "total_steps": 60, "decay_steps": 20,
        "floor": pytest.approx(0.01 / 0.05), "shape": "1-sqrt"}
    opt2 = make_optimizer(pullback.optim, "sgd")
    sched2 = build(opt2)
    opt2.load_state_dict({"state": {}, "param_groups": saved["groups"]})
    sched2.load_state_dict(saved["scheduler"])
    assert first + schedule([sched2], opt2, steps=25, start=45) == straight


def test_loading_another_kind_of_scheduler_is_refused():
    opt = make_optimizer(pullback.optim, "sgd")
    step = pullback.optim.lr_scheduler.StepLR(opt, 5)
    exponential = pullback.optim.lr_scheduler.ExponentialLR(opt, 0.9)
    with pytest.raises(pullback.errors.CheckpointError, match="does not fit a ExponentialLR"):
        exponential.load_state_dict(step.state_dict())
