"""Training runs for the resume test, shared by the test process and a fresh Python process.

``python optim_resume_worker.py CHECKPOINT STOP OUT NAME...`` loads, for each optimizer NAME,
the checkpoint ``CHECKPOINT`` saved halfway through its run, trains on to step STOP, and saves
the final weights of every run to ``OUT`` (one safetensors file, via ``pullback.save``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

import pullback
from pullback.optim import OPTIMIZERS, clip_grad_norm_
from pullback.optim.lr_scheduler import warmup_cosine

from optim_testlib import initial_arrays, pullback_loss, pullback_params

TOTAL_STEPS = 12
# Options that exercise every kind of state (momentum buffers, maxima, products of floats).
OPTIONS: dict[str, dict[str, Any]] = {
    "sgd": {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    "adam": {"lr": 0.01, "amsgrad": True}, "adamw": {"lr": 0.01},
    "adamax": {"lr": 0.01}, "nadam": {"lr": 0.01}, "radam": {"lr": 0.01},
    "rmsprop": {"lr": 0.01, "momentum": 0.5, "centered": True},
    "adagrad": {"lr": 0.05, "lr_decay": 0.01}, "lion": {"lr": 0.003, "weight_decay": 0.1},
    "adadelta": {"lr": 1.0, "rho": 0.8, "weight_decay": 0.01}, "rprop": {"lr": 0.01},
    "asgd": {"lr": 0.05, "t0": 3.0}, "sparse_adam": {"lr": 0.01},
}


def start(name: str) -> tuple[dict[str, pullback.Tensor], Any, Any]:
    """A fresh run: float32 weights, the optimizer in two param groups, a warmup-cosine."""
    params = pullback_params(initial_arrays(np.float32))
    groups = [{"params": [params["w1"], params["b1"]]},
              {"params": [params["w2"], params["b2"]], "lr": OPTIONS[name]["lr"] / 2}]
    opt = OPTIMIZERS[name](groups, **OPTIONS[name])
    return params, opt, warmup_cosine(opt, warmup_steps=3, total_steps=TOTAL_STEPS, min_lr=1e-4)


def train(params: dict[str, pullback.Tensor], opt: Any, sched: Any, begin: int, end: int) -> None:
    for step in range(begin, end):
        opt.zero_grad()
        pullback_loss(params, step).backward()
        clip_grad_norm_(list(params.values()), max_norm=0.5)
        opt.step()
        sched.step()


def checkpoint(params: dict[str, pullback.Tensor], opt: Any, sched: Any, step: int) -> dict:
    return {"model": params, "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
            "step": step}


def resume(path: str, name: str) -> tuple[dict[str, pullback.Tensor], Any, Any, int]:
    """A fresh run of ``name`` restored from its checkpoint in ``path``."""
    saved = pullback.load(path)[name]
    params, opt, sched = start(name)
    with pullback.no_grad():
        for key, value in saved["model"].items():
            params[key].copy_(value)
    opt.load_state_dict(saved["optimizer"])
    sched.load_state_dict(saved["scheduler"])
    return params, opt, sched, saved["step"]


def main(path: str, stop: int, out: str, names: list[str]) -> None:
    final = {}
    for name in names:
        params, opt, sched, step = resume(path, name)
        train(params, opt, sched, step, stop)
        final[name] = {k: p.detach() for k, p in params.items()}
    pullback.save(final, out)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:])
