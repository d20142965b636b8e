"""State dicts of optimizers and schedulers: a run resumed from a checkpoint in a new process
continues bit for bit like the uninterrupted run; state dicts survive JSON; bad ones are refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pullback
from pullback.errors import CheckpointError
from pullback.optim import OPTIMIZERS
from optim_resume_worker import TOTAL_STEPS, checkpoint, start, train
from optim_testlib import initial_arrays

HALF = TOTAL_STEPS // 2
WORKER = Path(__file__).with_name("optim_resume_worker.py")
# The optimizers stepped like the others (LBFGS takes one group and a closure: its resume is
# tested in test_optim_porting).
STEPPED = sorted(n for n, c in OPTIMIZERS.items()
                 if c.supports_param_groups and not c.requires_closure)


@pytest.fixture(scope="module")
def resumed(tmp_path_factory) -> dict[str, dict[str, np.ndarray]]:
    """Every optimizer trained to HALF here, saved with pullback.save, then resumed and
    trained to the end in a new Python process (one process for all optimizers)."""
    folder = tmp_path_factory.mktemp("resume")
    saved = {}
    for name in STEPPED:
        params, opt, sched = start(name)
        train(params, opt, sched, 0, HALF)
        saved[name] = checkpoint(params, opt, sched, HALF)
    pullback.save(saved, folder / "half.safetensors")
    out = folder / "final.safetensors"
    subprocess.run([sys.executable, str(WORKER), str(folder / "half.safetensors"),
                    str(TOTAL_STEPS), str(out), *STEPPED], check=True, timeout=300)
    return {name: {k: t.numpy() for k, t in run.items()}
            for name, run in pullback.load(out).items()}


@pytest.mark.parametrize("name", STEPPED)
def test_resume_in_a_new_process_is_bit_for_bit(name, resumed):
    params, opt, sched = start(name)
    train(params, opt, sched, 0, TOTAL_STEPS)
    for key, p in params.items():
        straight = p.detach().numpy()
        again = resumed[name][key]
        assert straight.dtype == again.dtype == np.float32
        assert np.array_equal(straight.view(np.uint32), again.view(np.uint32)), (
            f"{name}: {key} differs after resuming (largest difference "
            f"{np.max(np.abs(straight - again))})"
        )
        assert not np.array_equal(straight, initial_arrays(np.float32)[key]), "no training"


def _jsonable(obj):
    """The state dict as a JSON-only checkpoint would give it back: tensors as nested lists
    turned back into Tensors, int keys as strings, tuples as lists."""
    if isinstance(obj, pullback.Tensor):
        return {"__tensor__": obj.tolist(), "dtype": str(obj.dtype)}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def _tensors_back(obj):
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return pullback.tensor(obj["__tensor__"], dtype=obj["dtype"])
        return {k: _tensors_back(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_tensors_back(v) for v in obj]
    return obj


@pytest.mark.parametrize("name", STEPPED)
def test_state_dicts_survive_json(name):
    params, opt, sched = start(name)
    train(params, opt, sched, 0, HALF)
    text = json.dumps({"optimizer": _jsonable(opt.state_dict()),
                       "scheduler": sched.state_dict()})
    loaded = json.loads(text)

    params2, opt2, sched2 = start(name)
    with pullback.no_grad():
        for k in params:
            params2[k].copy_(params[k])
    opt2.load_state_dict(_tensors_back(loaded["optimizer"]))
    sched2.load_state_dict(loaded["scheduler"])
    assert opt2.param_groups[0].keys() == opt.param_groups[0].keys()
    for g, g2 in zip(opt.param_groups, opt2.param_groups):
        for k in g:
            if k != "params":
                assert g2[k] == g[k] and type(g2[k]) is type(g[k]), k
    train(params, opt, sched, HALF, TOTAL_STEPS)
    train(params2, opt2, sched2, HALF, TOTAL_STEPS)
    for k in params:
        assert np.array_equal(params[k].array, params2[k].array), k


def test_state_dict_layout_mirrors_pytorch():
    params, opt, sched = start("adam")
    train(params, opt, sched, 0, 2)
    sd = opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2, 3]]
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"]
    assert sd["state"][0]["step"] == 2
    assert sd["param_groups"][0]["betas"] == (0.9, 0.999)


def test_loaded_state_is_a_copy_on_the_parameters_dtype():
    params, opt, sched = start("adam")
    train(params, opt, sched, 0, 2)
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = sd["state"][0]["exp_avg"].double()
    params2, opt2, _ = start("adam")
    opt2.load_state_dict(sd)
    restored = opt2.state[params2["w1"]]["exp_avg"]
    assert restored.dtype == np.float32
    restored.array[...] = 7.0
    assert not np.any(opt.state[params["w1"]]["exp_avg"].array == 7.0)


def _trained(name="adam"):
    params, opt, sched = start(name)
    train(params, opt, sched, 0, 2)
    return opt.state_dict()


def test_refuses_a_different_number_of_groups():
    sd = _trained()
    sd["param_groups"] = sd["param_groups"][:1]
    _, opt, _ = start("adam")
    with pytest.raises(CheckpointError, match="1 param groups, this optimizer has 2"):
        opt.load_state_dict(sd)


def test_refuses_a_group_of_another_size():
    sd = _trained()
    sd["param_groups"][1]["params"] = [2]
    _, opt, _ = start("adam")
    with pytest.raises(CheckpointError, match="param group 1 of the state dict has 1 param"):
        opt.load_state_dict(sd)


def test_refuses_state_of_another_shape():
    sd = _trained()
    sd["state"][1]["exp_avg"] = pullback.zeros(3)
    _, opt, _ = start("adam")
    with pytest.raises(CheckpointError, match=r"state of parameter 1: 'exp_avg' has shape \(3,\), "
                       r"the parameter has shape \(8,\)"):
        opt.load_state_dict(sd)


def test_refuses_state_of_an_unknown_parameter():
    sd = _trained()
    sd["state"][9] = sd["state"][0]
    _, opt, _ = start("adam")
    with pytest.raises(CheckpointError, match="state for parameter 9"):
        opt.load_state_dict(sd)


def test_refuses_something_else():
    _, opt, _ = start("adam")
    with pytest.raises(CheckpointError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"exp_avg": 1})


def test_refuses_invalid_hyperparameters_in_a_state_dict():
    sd = _trained()
    sd["param_groups"][0]["lr"] = -1.0
    _, opt, _ = start("adam")
    with pytest.raises(ValueError, match="invalid lr: -1.0"):
        opt.load_state_dict(sd)
